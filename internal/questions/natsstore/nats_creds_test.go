package natsstore

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"

	"github.com/qkit-cli/qkit/internal/natstest"
	"github.com/qkit-cli/qkit/internal/questions"
	"github.com/qkit-cli/qkit/internal/questions/storetest"
)

// A server in operator mode (decentralised JWT auth) lets in a store with questions.nats_creds naming
// a user's credentials file, and refuses one without it.
func TestNATSWithACredentialsFile(t *testing.T) {
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	okp, err := nkeys.CreateOperator()
	must(err)
	opub, _ := okp.PublicKey()
	oc := jwt.NewOperatorClaims(opub)

	skp, err := nkeys.CreateAccount()
	must(err)
	spub, _ := skp.PublicKey()
	sjwt, err := jwt.NewAccountClaims(spub).Encode(okp)
	must(err)
	oc.SystemAccount = spub

	akp, err := nkeys.CreateAccount()
	must(err)
	apub, _ := akp.PublicKey()
	ac := jwt.NewAccountClaims(apub)
	ac.Limits.JetStreamLimits = jwt.JetStreamLimits{MemoryStorage: -1, DiskStorage: -1, Streams: -1, Consumer: -1}
	ajwt, err := ac.Encode(okp)
	must(err)

	ojwt, err := oc.Encode(okp)
	must(err)
	srv, err := natstest.Start(natstest.Options{JetStream: true, StoreDir: filepath.Join(t.TempDir(), "nats"),
		Operator: &natstest.Operator{JWT: ojwt, SystemAccount: spub, Accounts: map[string]string{spub: sjwt, apub: ajwt}}})
	must(err)
	t.Cleanup(srv.Stop)
	url := srv.URL()

	ukp, err := nkeys.CreateUser()
	must(err)
	upub, _ := ukp.PublicKey()
	ujwt, err := jwt.NewUserClaims(upub).Encode(akp)
	must(err)
	seed, _ := ukp.Seed()
	creds, err := jwt.FormatUserConfig(ujwt, seed)
	must(err)
	file := filepath.Join(t.TempDir(), "user.creds")
	must(os.WriteFile(file, creds, 0o600))

	st, err := New(Config{URL: url, Installation: "creds", Creds: file}, questions.Options{})
	must(err)
	defer st.Close()
	sess := storetest.CreateIn(t, st)
	if got, err := st.Get(sess.ID); err != nil || got.Status.Status != questions.Pending {
		t.Fatalf("%+v %v", got, err)
	}
	if _, err := New(Config{URL: url, Installation: "creds"}, questions.Options{}); err == nil || !strings.Contains(err.Error(), "the NATS server at "+url) {
		t.Fatalf("without credentials: %v", err)
	}
}
