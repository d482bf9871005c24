package domain

import "time"

// PeriodEnd is when the n-th billing period of a subscription started at start ends: n months
// later for monthly and split plans, n years later for yearly ones. Periods are counted from the
// start, not added one to the other, and a day the month lacks is clamped to its last day (as
// card processors do): a plan bought on January 31 renews on February 28 (or 29), then March 31,
// never drifting to the 28th for good.
func PeriodEnd(start time.Time, interval string, n int) time.Time {
	months := n
	if interval == IntervalYear {
		months = 12 * n
	}
	return addMonthsClamped(start.UTC(), months)
}

func addMonthsClamped(t time.Time, months int) time.Time {
	year, month, day := t.Date()
	first := time.Date(year, month+time.Month(months), 1, t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC)
	lastDay := first.AddDate(0, 1, -1).Day()
	return first.AddDate(0, 0, min(day, lastDay)-1)
}
