package natsstore

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/qkit-cli/qkit/internal/natstest"
	"github.com/qkit-cli/qkit/internal/questions"
	"github.com/qkit-cli/qkit/internal/questions/storetest"
)

// pki is a throw-away CA with a server certificate for 127.0.0.1 and a client certificate, as files.
type pki struct {
	ca, serverCert, serverKey, clientCert, clientKey string
}

func newPKI(t *testing.T) *pki {
	t.Helper()
	dir := t.TempDir()
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	key := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	caKey := key()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "qkit test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	p := &pki{ca: write("ca.pem", "CERTIFICATE", caDER)}
	leaf := func(serial int64, usage x509.ExtKeyUsage, certName, keyName string) (string, string) {
		k := key()
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: certName},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			ExtKeyUsage: []x509.ExtKeyUsage{usage}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &k.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		kder, err := x509.MarshalECPrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return write(certName, "CERTIFICATE", der), write(keyName, "EC PRIVATE KEY", kder)
	}
	p.serverCert, p.serverKey = leaf(2, x509.ExtKeyUsageServerAuth, "server.pem", "server-key.pem")
	p.clientCert, p.clientKey = leaf(3, x509.ExtKeyUsageClientAuth, "client.pem", "client-key.pem")
	return p
}

// The TLS settings reach the connection: a server that requires client certificates signed by its
// CA lets in a store with questions.nats_tls_ca/_cert/_key, and refuses one without the certificate
// or without the CA, naming the URL.
func TestNATSOverTLSWithClientCertificates(t *testing.T) {
	p := newPKI(t)
	srv, err := natstest.Start(natstest.Options{JetStream: true, StoreDir: filepath.Join(t.TempDir(), "nats"),
		TLS: &natstest.TLS{CertFile: p.serverCert, KeyFile: p.serverKey, CAFile: p.ca, Verify: true, Timeout: 5 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	url := "tls://127.0.0.1:" + strconv.Itoa(srv.Port())

	st, err := New(Config{URL: url, Installation: "tls", TLSCA: p.ca, TLSCert: p.clientCert, TLSKey: p.clientKey}, questions.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Create(storetest.MustSet(t, storetest.LangSet), questions.CreateOptions{Source: "test"}); err != nil {
		t.Fatal(err)
	}
	for name, cfg := range map[string]Config{
		"no client certificate": {URL: url, Installation: "tls", TLSCA: p.ca},
		"no CA":                 {URL: url, Installation: "tls", TLSCert: p.clientCert, TLSKey: p.clientKey},
	} {
		if _, err := New(cfg, questions.Options{}); err == nil || !strings.Contains(err.Error(), "the NATS server at "+url) {
			t.Errorf("%s: got %v", name, err)
		}
	}
}

// A credentials or TLS file that cannot be read is named with its setting, at start, before any
// connection: it is a local file, not the server's fault.
func TestNATSMissingCredsFile(t *testing.T) {
	srv := startNATS(t)
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.creds")
	cert := filepath.Join(dir, "c.pem")
	if err := os.WriteFile(cert, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		cfg  Config
		want string
	}{
		"creds":   {Config{Creds: missing}, "questions.nats_creds: cannot read " + missing + ": no such file or directory"},
		"ca":      {Config{TLSCA: missing}, "questions.nats_tls_ca: cannot read " + missing + ": no such file or directory"},
		"cert":    {Config{TLSCert: missing, TLSKey: missing}, "questions.nats_tls_cert: cannot read " + missing},
		"key dir": {Config{TLSCert: cert, TLSKey: dir}, "questions.nats_tls_key: " + dir + " is a directory, not a file"},
	} {
		c.cfg.URL, c.cfg.Installation = srv.URL(), "x"
		_, err := New(c.cfg, questions.Options{})
		if err == nil || err.Error() != c.want && !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", name, err, c.want)
		}
		if strings.Contains(fmt.Sprint(err), "NATS server") {
			t.Errorf("%s: a local file is blamed on the server: %v", name, err)
		}
	}
}
