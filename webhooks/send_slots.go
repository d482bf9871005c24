package webhooks

import (
	"slices"
	"time"
)

// sendSlots divides a process's send slots so that one account's slow receivers cannot hold them
// all: without it the dispatcher took due deliveries oldest first, whoever they were for, and one
// replay of a few thousand events to a receiver that never answers held every slot for as many
// timeouts (docs/webhooks.md, "Slow receivers").
//
// A send takes one of Concurrency slots. A send still waiting for its answer after SlowAfter
// gives its slot back and waits in the slow pool (four times as many: a waiting send costs a
// goroutine and a connection, nothing of the database), and its account is slow for the next
// minute. A slow account's deliveries are claimed apart (Dispatcher.claimSlowAccount): at most
// accountShare of them in flight from this process, at most subscriptionShare of one of its
// subscriptions, wherever they sit in the queue; every other account's claim passes them over
// (claimExceptStatement). While the slow pool is full, a send that turns slow keeps its slot until
// a place frees (waiting), and slow accounts are given no slot (roomOf). An account none of whose receivers is slow is claimed as before, oldest first,
// with every slot free to it: a burst to one fast receiver still has the whole process.
//
// Only the dispatcher's loop uses it: it needs no lock.
type sendSlots struct {
	size, slowPool                  int
	accountShare, subscriptionShare int
	remember                        time.Duration

	regular, slow int // sends holding a slot, and sends in the slow pool
	// waiting are slow sends that found the slow pool full: they keep their slot until the pool
	// has room (or they end).
	waiting        []*flight
	byAccount      map[string]int
	bySubscription map[string]int
	accountOf      map[string]string    // of the subscriptions in bySubscription
	slowUntil      map[string]time.Time // the accounts known slow, until when
	// moreDue: the last claim of a slow account took all its room, or passed over a subscription
	// at its share, so more of its deliveries may be claimable when one of its sends ends.
	moreDue map[string]bool
}

// flight is one send under way. Only the dispatcher's loop reads or changes it.
type flight struct {
	c    claimed
	slow bool // moved to the slow pool
	done bool
}

// How long an account stays slow after its last slow send.
const rememberSlow = time.Minute

// newSendSlots divides concurrency slots: a slow account gets a quarter of them, one of its
// subscriptions an eighth (at least one each).
func newSendSlots(concurrency int) *sendSlots {
	return &sendSlots{
		size: concurrency, slowPool: 4 * concurrency,
		accountShare: max(concurrency/4, 1), subscriptionShare: max(concurrency/8, 1),
		remember:  rememberSlow,
		byAccount: map[string]int{}, bySubscription: map[string]int{}, accountOf: map[string]string{},
		slowUntil: map[string]time.Time{}, moreDue: map[string]bool{},
	}
}

// free is how many slots no send holds.
func (s *sendSlots) free() int { return s.size - s.regular }

// sending is how many sends are under way, in slots and in the slow pool.
func (s *sendSlots) sending() int { return s.regular + s.slow }

// start gives a claimed delivery a slot.
func (s *sendSlots) start(c claimed) *flight {
	s.regular++
	s.byAccount[c.accountID]++
	s.bySubscription[c.subscriptionID]++
	s.accountOf[c.subscriptionID] = c.accountID
	return &flight{c: c}
}

// finish ends a send. It reports whether to claim again: a slot was freed for a send that waited
// for the slow pool, or more deliveries of a slow account may be claimable now that one of its
// sends ended (its last claim took all the room it had).
func (s *sendSlots) finish(f *flight) (claimAgain bool) {
	f.done = true
	if f.slow {
		s.slow--
		claimAgain = s.admitWaiting()
	} else {
		s.regular--
	}
	account, subscription := f.c.accountID, f.c.subscriptionID
	if s.byAccount[account]--; s.byAccount[account] == 0 {
		delete(s.byAccount, account)
	}
	if s.bySubscription[subscription]--; s.bySubscription[subscription] == 0 {
		delete(s.bySubscription, subscription)
		delete(s.accountOf, subscription)
	}
	_, slow := s.slowUntil[account]
	return claimAgain || slow && s.moreDue[account]
}

// admitWaiting moves slow sends that waited for the slow pool into it while it has room, giving
// their slots back. It reports whether it moved any.
func (s *sendSlots) admitWaiting() (moved bool) {
	for len(s.waiting) > 0 && s.slow < s.slowPool {
		f := s.waiting[0]
		s.waiting = s.waiting[1:]
		if f.done {
			continue
		}
		f.slow = true
		s.regular--
		s.slow++
		moved = true
	}
	return moved
}

// turnSlow marks a send that has waited SlowAfter for its answer, and its account, slow. It
// reports whether the send gave its slot back (the slow pool had room), and whether its account
// was not known slow before.
func (s *sendSlots) turnSlow(f *flight, now time.Time) (freed, newly bool) {
	if f.done || f.slow {
		return false, false
	}
	until, known := s.slowUntil[f.c.accountID]
	s.slowUntil[f.c.accountID] = now.Add(s.remember)
	newly = !known || now.After(until)
	if s.slow >= s.slowPool {
		s.waiting = append(s.waiting, f)
		return false, newly
	}
	f.slow = true
	s.regular--
	s.slow++
	return true, newly
}

// slowAccounts lists the accounts known slow at now, forgetting those whose minute is over.
func (s *sendSlots) slowAccounts(now time.Time) []string {
	var out []string
	for account, until := range s.slowUntil {
		if now.After(until) {
			delete(s.slowUntil, account)
			delete(s.moreDue, account)
			continue
		}
		out = append(out, account)
	}
	slices.Sort(out) // one order, so that a claim passes over them the same way each time
	return out
}

// roomOf is how many more deliveries of a slow account may be sent at once: within its share,
// and within the slow pool's room, where they are likely to end up (while the pool is full, a
// slow account's sends would hold the slots the others need).
func (s *sendSlots) roomOf(account string) int {
	return max(min(s.accountShare-s.byAccount[account], s.slowPool-s.slow-s.stillWaiting()), 0)
}

// stillWaiting is how many sends wait for the slow pool, forgetting those that ended.
func (s *sendSlots) stillWaiting() int {
	s.waiting = slices.DeleteFunc(s.waiting, func(f *flight) bool { return f.done })
	return len(s.waiting)
}

// fullSubscriptions lists the subscriptions of an account that have their whole share in flight,
// counting those in taking too (claimed, not started yet), and the most any other of them has.
func (s *sendSlots) fullSubscriptions(account string, taking map[string]int) (full []string, busiest int) {
	counted := map[string]bool{}
	count := func(subscription string, n int) {
		switch {
		case n >= s.subscriptionShare:
			full = append(full, subscription)
		default:
			busiest = max(busiest, n)
		}
	}
	for subscription, n := range s.bySubscription {
		if s.accountOf[subscription] == account {
			counted[subscription] = true
			count(subscription, n+taking[subscription])
		}
	}
	for subscription, n := range taking {
		if !counted[subscription] {
			count(subscription, n)
		}
	}
	slices.Sort(full)
	return full, busiest
}
