package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTick is Linux's USER_HZ, the unit of /proc/stat and /proc/<pid>/stat: 100 per second on
// every architecture Go runs Linux on.
const clockTick = 10 * time.Millisecond

// cpuSample is where the machine's CPU time had gone by one moment, in clock ticks, summed over
// every core. The service, this load script and the database share the machine's cores, so a
// phase's rate is bounded by the machine's CPU time per request as much as by any one of them.
type cpuSample struct {
	busy, steal, total int64 // the machine: working, taken by the hypervisor, in all
	service, script    int64 // the service's process (0 when there is none) and this load script
}

// sampleCPU reads the machine's and the processes' CPU time from /proc; false where /proc cannot
// tell (not Linux).
func sampleCPU(servicePID int) (cpuSample, bool) {
	var s cpuSample
	stat, err := os.ReadFile("/proc/stat")
	if err != nil {
		return s, false
	}
	if s.busy, s.steal, s.total, err = machineTicks(string(stat)); err != nil {
		return s, false
	}
	if s.script, err = processTicks("/proc/self/stat"); err != nil {
		return s, false
	}
	if servicePID > 0 {
		if s.service, err = processTicks(fmt.Sprintf("/proc/%d/stat", servicePID)); err != nil {
			return s, false
		}
	}
	return s, true
}

// machineTicks reads the "cpu" line of /proc/stat (user nice system idle iowait irq softirq steal
// ...): busy is user, nice, system, irq and softirq; guest time is counted in user already.
func machineTicks(stat string) (busy, steal, total int64, err error) {
	line, _, _ := strings.Cut(stat, "\n")
	fields := strings.Fields(line)
	if len(fields) < 9 || fields[0] != "cpu" {
		return 0, 0, 0, fmt.Errorf("loadtest: /proc/stat starts with %q", line)
	}
	var v [8]int64
	for i := range v {
		if v[i], err = strconv.ParseInt(fields[1+i], 10, 64); err != nil {
			return 0, 0, 0, fmt.Errorf("loadtest: /proc/stat: %w", err)
		}
		total += v[i]
	}
	return v[0] + v[1] + v[2] + v[5] + v[6], v[7], total, nil
}

// processTicks reads a process's user and system time from its /proc/<pid>/stat. The command
// name in parentheses may hold spaces and parentheses, so fields are counted after the last ")".
func processTicks(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return statTicks(string(b))
}

func statTicks(stat string) (int64, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("loadtest: no command name in %q", stat)
	}
	// After ") ": state(3) ppid(4) ... utime(14) stime(15), numbered as proc(5) numbers them.
	fields := strings.Fields(stat[i+1:])
	if len(fields) < 13 {
		return 0, fmt.Errorf("loadtest: short process stat %q", stat)
	}
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("loadtest: process stat times %q %q", fields[11], fields[12])
	}
	return utime + stime, nil
}

// cpuUse is where CPU time went over a phase, per request.
type cpuUse struct {
	perRequest      time.Duration // the whole machine's busy time
	service, script time.Duration
	busy, steal     float64 // shares of the machine's time over the phase
}

// cpuSince is the CPU time between two samples, per request.
func cpuSince(start, end cpuSample, requests int) cpuUse {
	total := end.total - start.total
	if requests <= 0 || total <= 0 {
		return cpuUse{}
	}
	per := func(ticks int64) time.Duration { return time.Duration(ticks) * clockTick / time.Duration(requests) }
	return cpuUse{
		perRequest: per(end.busy - start.busy),
		service:    per(end.service - start.service),
		script:     per(end.script - start.script),
		busy:       float64(end.busy-start.busy) / float64(total),
		steal:      float64(end.steal-start.steal) / float64(total),
	}
}

// String says where a request's CPU time went: what is neither the service nor this script is
// the database's (PostgreSQL's processes, or pgbench and its server) and the kernel's own threads.
// The kernel measures a process's time exactly but samples the machine's at each tick, so the
// rest may read low by up to a tenth of the whole (0 where the sampling fell short).
func (u cpuUse) String() string {
	rest := u.perRequest - u.service - u.script
	s := fmt.Sprintf("CPU per request %s (", ms(u.perRequest))
	if u.service > 0 {
		s += fmt.Sprintf("service %s, ", ms(u.service))
	}
	s += fmt.Sprintf("load script %s, the rest %s); machine %.0f%% busy", ms(u.script), ms(max(0, rest)), 100*u.busy)
	if u.steal >= 0.01 {
		s += fmt.Sprintf(", %.0f%% taken by the hypervisor", 100*u.steal)
	}
	return s
}

func ms(d time.Duration) string { return fmt.Sprintf("%.3f ms", float64(d.Microseconds())/1000) }

// measureCPU samples before a phase and returns what reports its use per request after it; it
// reports nothing where /proc cannot tell.
func measureCPU(servicePID int) func(requests int) (cpuUse, bool) {
	start, ok := sampleCPU(servicePID)
	return func(requests int) (cpuUse, bool) {
		end, ok2 := sampleCPU(servicePID)
		if !ok || !ok2 || requests <= 0 {
			return cpuUse{}, false
		}
		return cpuSince(start, end, requests), true
	}
}
