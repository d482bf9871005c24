package eventstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// A batch whose COMMIT reached PostgreSQL but whose answer did not (the connection broke: a
// network cut, a proxy or PostgreSQL restarting) may have committed. It is not tried again
// request by request, as a batch a statement refused is: each request would meet its own events
// in the log (their ids are unique) and report a database error for a write that committed. Each
// request of the batch fails with the unknown outcome, and the log holds each append once.
func TestABatchWhoseCommitAnswerIsLostIsNotTriedAgain(t *testing.T) {
	ctx := context.Background()
	direct := sqldbtest.Open(t, sqldb.Postgres)
	proxy := startAnswerLosingProxy(t, direct)
	db, err := sqldb.Open(ctx, proxy.url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	s := New(db)
	t.Cleanup(s.Close)
	meta := domain.Metadata{AccountID: "acc_test", Actor: "operator"}
	var batch []*appendRequest
	for i := range 3 {
		stream := fmt.Sprintf("ct_%d", i)
		req, err := s.encode(ctx, meta, []domain.StreamAppend{{StreamID: stream, ExpectedVersion: domain.AnyVersion,
			Events: []domain.Event{domain.TagApplied{ContactID: stream, TagID: "tag_1", TagName: "VIP"}}}})
		if err != nil {
			t.Fatal(err)
		}
		batch = append(batch, req)
	}
	proxy.loseNextCommitAnswer()
	s.commit(batch)
	for i, req := range batch {
		// The APIs answer it 503 with Retry-After (sqldb.Unavailable), as any write that met a
		// broken connection.
		if res := <-req.done; !errors.Is(res.err, sqldb.ErrCommitUnknown) || !sqldb.Unavailable(res.err) {
			t.Errorf("request %d of a batch whose COMMIT's answer was lost: %v, want the unknown outcome of an unavailable database", i, res.err)
		}
	}
	if !proxy.lost.Load() {
		t.Fatal("no COMMIT's answer went through the proxy")
	}
	var n int
	if err := direct.Read.QueryRowContext(ctx, `SELECT COUNT(*) FROM events`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != len(batch) {
		t.Errorf("the log holds %d events after a batch of %d appends that committed once", n, len(batch))
	}
}

// answerLosingProxy forwards PostgreSQL's protocol both ways, and once armed breaks the
// connection in place of forwarding the answer to the next COMMIT: PostgreSQL has committed,
// the client never hears it.
type answerLosingProxy struct {
	url   string
	armed atomic.Bool
	lost  atomic.Bool
	mu    sync.Mutex
	conns []net.Conn
}

// commitComplete is PostgreSQL's CommandComplete message for a COMMIT.
var commitComplete = append([]byte{'C', 0, 0, 0, 11}, "COMMIT\x00"...)

func startAnswerLosingProxy(t *testing.T, db *sqldb.DB) *answerLosingProxy {
	t.Helper()
	var target string
	if err := db.Read.QueryRow(`SELECT host(inet_server_addr()) || ':' || inet_server_port()`).Scan(&target); err != nil {
		t.Fatal(err)
	}
	var name string
	if err := db.Read.QueryRow(`SELECT current_database()`).Scan(&name); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &answerLosingProxy{url: (&url.URL{Scheme: "postgres", User: url.User("postgres"), Host: ln.Addr().String(), Path: "/" + name, RawQuery: "sslmode=disable"}).String()}
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, c := range p.conns {
			c.Close()
		}
	})
	go func() {
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			server, err := net.Dial("tcp", target)
			if err != nil {
				client.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, client, server)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(server, client); server.Close() }()
			go p.answer(client, server)
		}
	}()
	return p
}

func (p *answerLosingProxy) loseNextCommitAnswer() { p.armed.Store(true) }

// answer forwards the server's messages to the client, but for a COMMIT's answer once armed.
func (p *answerLosingProxy) answer(client, server net.Conn) {
	defer client.Close()
	buf := make([]byte, 64<<10)
	for {
		n, err := server.Read(buf)
		if n > 0 {
			if bytes.Contains(buf[:n], commitComplete) && p.armed.CompareAndSwap(true, false) {
				p.lost.Store(true)
				server.Close()
				return
			}
			if _, werr := client.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
