package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Plain HTTP only on a loopback address; secrets from flags or the environment.
func TestConfig(t *testing.T) {
	env := func(vars map[string]string) func(string) string { return func(k string) string { return vars[k] } }
	secrets := env(map[string]string{"FUNNEL_WEBHOOK_SECRET": "whsec_x", "FUNNEL_API_KEY": "fnl_x"})
	cfg, err := parseConfig(nil, secrets, io.Discard)
	if err != nil || cfg.secret != "whsec_x" || cfg.apiKey != "fnl_x" || cfg.addr != "127.0.0.1:4000" || cfg.tolerance != 5*time.Minute {
		t.Fatalf("defaults: %+v %v", cfg, err)
	}
	if cfg, err := parseConfig([]string{"-secret", "flag", "-addr", "[::1]:4000"}, secrets, io.Discard); err != nil || cfg.secret != "flag" {
		t.Fatalf("flags over the environment: %+v %v", cfg, err)
	}
	for _, c := range []struct {
		args []string
		env  func(string) string
		want string
	}{
		{nil, env(nil), "-secret"},
		{nil, env(map[string]string{"FUNNEL_WEBHOOK_SECRET": "s"}), "-api-key"},
		{[]string{"-addr", "0.0.0.0:4000"}, secrets, "not a loopback address"},
		{[]string{"-addr", ":4000"}, secrets, "not a loopback address"},
		{[]string{"-tls-cert", "c.pem"}, secrets, "go together"},
		{[]string{"-tolerance", "0s"}, secrets, "-tolerance"},
		{[]string{"-fail-first", "-1"}, secrets, "-fail-first"},
	} {
		if _, err := parseConfig(c.args, c.env, io.Discard); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error naming %s", c.args, err, c.want)
		}
	}
	if _, err := parseConfig([]string{"-addr", "0.0.0.0:4000", "-tls-cert", "c.pem", "-tls-key", "k.pem"}, secrets, io.Discard); err != nil {
		t.Errorf("HTTPS on every interface: %v", err)
	}
}

// With a certificate and key the receiver serves HTTPS, and stops cleanly when told to.
func TestServesHTTPS(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, pool := selfSigned(t, dir)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cfg := config{addr: addr, tlsCert: certFile, tlsKey: keyFile, secret: testSecret, apiURL: "http://127.0.0.1:1", apiKey: "fnl_x",
		dbPath: filepath.Join(dir, "receiver.db"), tolerance: time.Minute}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil))) }()
	httpsClient := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	deadline := time.Now().Add(10 * time.Second)
	for {
		res, err := httpsClient.Get("https://" + addr + "/healthz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode != http.StatusOK {
				t.Fatalf("healthz: %d", res.StatusCode)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no HTTPS answer: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if res, err := (&http.Client{Timeout: 2 * time.Second}).Get("http://" + addr + "/healthz"); err == nil {
		res.Body.Close()
		if res.StatusCode == http.StatusOK {
			t.Error("plain HTTP answered on the HTTPS listener")
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
}

// selfSigned writes a certificate for 127.0.0.1 and its key, and returns a pool that trusts it.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "receiver test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}
