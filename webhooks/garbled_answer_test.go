package webhooks_test

import (
	"bufio"
	"net"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/funnelhq/funnel/infra/service"
	"github.com/funnelhq/funnel/infra/service/servicetest"
)

// rawReceiver answers every request, once its headers are read, with answer as it is, bytes
// that need not be HTTP, and closes the connection.
func rawReceiver(t *testing.T, answer string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil || line == "\r\n" {
						break
					}
				}
				_, _ = c.Write([]byte(answer))
			}()
		}
	}()
	return "http://" + l.Addr().String()
}

// garblingReceiver answers every request with a line that is not HTTP, of "ä" (two bytes each):
// Go's client quotes it in its error (malformed HTTP response "äää…"), which the delivery log
// keeps, cut to a few hundred bytes.
func garblingReceiver(t *testing.T) string {
	return rawReceiver(t, strings.Repeat("ä", 400)+"\r\n\r\n")
}

// The error of an attempt quotes what the receiver answered, cut to fit the log. Cut in the
// middle of a character, it was not UTF-8, which PostgreSQL refuses: the record failed, with
// every attempt of its batch, and the delivery was sent again each time its claim lapsed, never
// backed off nor given up. Two paths of different lengths put the cut at both parities.
func TestAnAttemptWhoseAnswerIsGarbledIsRecorded(t *testing.T) {
	run(t, func(c *service.Config) {
		c.WebhookBackoffBase, c.WebhookBackoffCap = time.Hour, time.Hour
	}, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		garbling := garblingReceiver(t)
		form := newForm(t, svc, acc.ID, "Signup")
		for _, path := range []string{"/a", "/ab"} {
			subscribe(t, svc, acc.ID, map[string]any{"url": garbling + path, "events": []string{"form.submitted"}})
		}
		submit(t, svc, acc.ID, form, "garbled@example.com")
		deadline := time.Now().Add(5 * time.Second)
		for {
			list, recorded := deliveries(t, svc, acc.ID, ""), 0
			for _, d := range list {
				if attempts := d["attempts"].([]any); len(attempts) == 1 {
					recorded++
					msg := attempts[0].(map[string]any)["error"].(string)
					if !strings.Contains(msg, "malformed HTTP response") || !utf8.ValidString(msg) || len(msg) > 300 {
						t.Fatalf("the attempt's error = %q", msg)
					}
				}
			}
			if len(list) == 2 && recorded == 2 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d of %d deliveries have their attempt in the log 5 s after they were sent: %v", recorded, len(list), list)
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
}

// headerFloodingReceiver answers 200 with 1 MiB of headers. Go's client took up to 10 MiB of
// them per answer, so a receiver of the integrator's choosing could hold that much of the
// service's memory for each delivery in flight.
func headerFloodingReceiver(t *testing.T) string {
	return rawReceiver(t, "HTTP/1.1 200 OK\r\nX-Flood: "+strings.Repeat("a", 1<<20)+"\r\nContent-Length: 0\r\n\r\n")
}

// An answer with more than 64 KiB of headers is a failed attempt, whatever its status, and says why.
func TestAnAnswerWithTooManyHeadersFails(t *testing.T) {
	run(t, func(c *service.Config) {
		c.WebhookBackoffBase, c.WebhookBackoffCap = time.Hour, time.Hour
	}, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		form := newForm(t, svc, acc.ID, "Signup")
		subscribe(t, svc, acc.ID, map[string]any{"url": headerFloodingReceiver(t), "events": []string{"form.submitted"}})
		submit(t, svc, acc.ID, form, "flood@example.com")
		deadline := time.Now().Add(5 * time.Second)
		for {
			list := deliveries(t, svc, acc.ID, "")
			if len(list) == 1 {
				if attempts := list[0]["attempts"].([]any); len(attempts) == 1 {
					attempt := attempts[0].(map[string]any)
					if attempt["error"] != "the answer's headers exceed 64 KiB" || list[0]["status"] != "pending" {
						t.Fatalf("the delivery after an answer of 1 MiB of headers: %v", list[0])
					}
					return
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("no attempt in the log 5 s after the submission: %v", list)
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
}
