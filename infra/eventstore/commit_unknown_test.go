package eventstore

import (
	"bytes"
	"context"
	"encoding/binary"
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
	proxy := startCommitAnswerProxy(t, direct, false)
	db, err := sqldb.Open(ctx, proxy.url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	s := New(db)
	t.Cleanup(s.Close)
	batch := tagBatch(t, s, 3)
	proxy.armed.Store(true)
	s.commit(batch)
	for i, req := range batch {
		// The APIs answer it 503 with Retry-After (sqldb.Unavailable), as any write that met a
		// broken connection.
		if res := <-req.done; !errors.Is(res.err, sqldb.ErrCommitUnknown) || !sqldb.Unavailable(res.err) {
			t.Errorf("request %d of a batch whose COMMIT's answer was lost: %v, want the unknown outcome of an unavailable database", i, res.err)
		}
	}
	if !proxy.fired.Load() {
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

// A batch whose COMMIT was answered, and whose session PostgreSQL then ended (a terminated backend
// sends its FATAL after the answer), committed: its requests succeed, once each.
func TestABatchCommittedThenTerminatedSucceeds(t *testing.T) {
	ctx := context.Background()
	direct := sqldbtest.Open(t, sqldb.Postgres)
	proxy := startCommitAnswerProxy(t, direct, true)
	db, err := sqldb.Open(ctx, proxy.url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	s := New(db)
	t.Cleanup(s.Close)
	batch := tagBatch(t, s, 3)
	proxy.armed.Store(true)
	s.commit(batch)
	if !proxy.fired.Load() {
		t.Fatal("no COMMIT's answer went through the proxy")
	}
	for i, req := range batch {
		if res := <-req.done; res.err != nil {
			t.Errorf("request %d of a batch that committed, then lost its session: %v, want success", i, res.err)
		}
	}
	var n int
	if err := direct.Read.QueryRowContext(ctx, `SELECT COUNT(*) FROM events`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != len(batch) {
		t.Errorf("the log holds %d events after a batch of %d appends that committed once", n, len(batch))
	}
}

// tagBatch is a batch of n appends without an expected version, each to a stream of its own.
func tagBatch(t *testing.T, s *Store, n int) []*appendRequest {
	t.Helper()
	meta := domain.Metadata{AccountID: "acc_test", Actor: "operator"}
	var batch []*appendRequest
	for i := range n {
		stream := fmt.Sprintf("ct_%d", i)
		req, err := s.encode(context.Background(), meta, []domain.StreamAppend{{StreamID: stream, ExpectedVersion: domain.AnyVersion,
			Events: []domain.Event{domain.TagApplied{ContactID: stream, TagID: "tag_1", TagName: "VIP"}}}})
		if err != nil {
			t.Fatal(err)
		}
		batch = append(batch, req)
	}
	return batch
}

// commitAnswerProxy forwards PostgreSQL's protocol both ways, and once armed, at the answer to
// the next COMMIT, breaks the connection: in place of the answer (the client never hears that
// PostgreSQL committed), or after it and a FATAL, as PostgreSQL ending the session does.
type commitAnswerProxy struct {
	url          string
	fatal        bool
	armed, fired atomic.Bool
	mu           sync.Mutex
	conns        []net.Conn
}

// commitComplete is PostgreSQL's CommandComplete message for a COMMIT.
var commitComplete = append([]byte{'C', 0, 0, 0, 11}, "COMMIT\x00"...)

// sessionTerminated is the ErrorResponse of a backend terminated by an administrator.
func sessionTerminated() []byte {
	var body bytes.Buffer
	for _, f := range [][2]string{{"S", "FATAL"}, {"V", "FATAL"}, {"C", "57P01"}, {"M", "terminating connection due to administrator command"}} {
		body.WriteString(f[0] + f[1] + "\x00")
	}
	body.WriteByte(0)
	msg := []byte{'E', 0, 0, 0, 0}
	binary.BigEndian.PutUint32(msg[1:], uint32(4+body.Len()))
	return append(msg, body.Bytes()...)
}

func startCommitAnswerProxy(t *testing.T, db *sqldb.DB, fatal bool) *commitAnswerProxy {
	t.Helper()
	var target, name string
	if err := db.Read.QueryRow(`SELECT host(inet_server_addr()) || ':' || inet_server_port(), current_database()`).Scan(&target, &name); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &commitAnswerProxy{fatal: fatal,
		url: (&url.URL{Scheme: "postgres", User: url.User("postgres"), Host: ln.Addr().String(), Path: "/" + name, RawQuery: "sslmode=disable"}).String()}
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

// answer forwards the server's messages to the client, but for a COMMIT's answer once armed.
func (p *commitAnswerProxy) answer(client, server net.Conn) {
	defer client.Close()
	buf := make([]byte, 64<<10)
	for {
		n, err := server.Read(buf)
		if n > 0 {
			if i := bytes.Index(buf[:n], commitComplete); i >= 0 && p.armed.CompareAndSwap(true, false) {
				p.fired.Store(true)
				if p.fatal {
					_, _ = client.Write(append(append([]byte{}, buf[:i+len(commitComplete)]...), sessionTerminated()...))
				}
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
