package main

import (
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestProcessStatTimesAreCountedAfterTheCommandName(t *testing.T) {
	// A command name may hold spaces and parentheses; utime and stime are fields 14 and 15.
	stat := "4242 (funnel (a) b) S 1 4242 4242 0 -1 4194560 1200 0 0 0 731 269 0 0 20 0 9 0 12345 1000000 2000 18446744073709551615\n"
	ticks, err := statTicks(stat)
	if err != nil {
		t.Fatal(err)
	}
	if ticks != 731+269 {
		t.Fatalf("ticks = %d, want utime 731 + stime 269", ticks)
	}
	if _, err := statTicks("4242 (cut short) S 1 2"); err == nil {
		t.Fatal("a short stat line was read")
	}
}

func TestMachineTicksCountWorkNotIdleOrSteal(t *testing.T) {
	// user nice system idle iowait irq softirq steal guest guest_nice
	stat := "cpu  100 5 40 900 30 2 3 20 7 0\ncpu0 50 2 20 450 15 1 1 10 3 0\n"
	busy, steal, total, err := machineTicks(stat)
	if err != nil {
		t.Fatal(err)
	}
	if busy != 100+5+40+2+3 || steal != 20 || total != 100+5+40+900+30+2+3+20 {
		t.Fatalf("busy %d, steal %d, total %d", busy, steal, total)
	}
	if _, _, _, err := machineTicks("intr 1 2 3\n"); err == nil {
		t.Fatal("a stat without its cpu line was read")
	}
}

func TestCPUPerRequestSplitsTheMachinesTime(t *testing.T) {
	start := cpuSample{busy: 1000, steal: 10, total: 4000, service: 300, script: 100}
	end := cpuSample{busy: 2600, steal: 50, total: 6000, service: 1100, script: 300}
	use := cpuSince(start, end, 4000) // 1,600 busy ticks (16 s) over 4,000 requests
	if use.perRequest != 4*time.Millisecond || use.service != 2*time.Millisecond || use.script != 500*time.Microsecond {
		t.Fatalf("per request %s, service %s, script %s", use.perRequest, use.service, use.script)
	}
	if use.busy != 0.8 || use.steal != 0.02 {
		t.Fatalf("busy %v, steal %v", use.busy, use.steal)
	}
	want := "CPU per request 4.000 ms (service 2.000 ms, load script 0.500 ms, the rest 1.500 ms); machine 80% busy, 2% taken by the hypervisor"
	if got := use.String(); got != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
	if (cpuSince(start, end, 0) != cpuUse{}) {
		t.Fatal("no requests gave a CPU time per request")
	}
}

func TestSampledCPUSeesThisProcessWork(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("CPU time is read from Linux's /proc")
	}
	start, ok := sampleCPU(os.Getpid())
	if !ok {
		t.Fatal("/proc could not be read")
	}
	// Spin until this process has used at least 100 ticks (a second) of CPU.
	var end cpuSample
	var sink strings.Builder
	for deadline := time.Now().Add(20 * time.Second); end.script-start.script < 100; {
		if time.Now().After(deadline) {
			t.Fatalf("the process's CPU time did not grow: %+v → %+v", start, end)
		}
		for i := range 100_000 {
			sink.WriteByte(byte(i))
		}
		sink.Reset()
		end, _ = sampleCPU(os.Getpid())
	}
	// Both figures are this process's, read from /proc one after the other: a tick may fall
	// between the two reads of one sample, never more.
	if d := (end.service - start.service) - (end.script - start.script); d < -1 || d > 1 {
		t.Fatalf("the same process read twice: service %d ticks, script %d", end.service-start.service, end.script-start.script)
	}
	// The machine's busy time includes this process's. The kernel samples the machine's time at
	// each tick but measures a process's exactly: over a second, the machine's read 87-89 ticks
	// against the process's 100 at times on this VM.
	if busy := end.busy - start.busy; busy < (end.script-start.script)*3/4 {
		t.Fatalf("machine busy %d ticks, less than this process's %d", busy, end.script-start.script)
	}
}
