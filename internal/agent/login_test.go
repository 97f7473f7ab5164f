package agent

import (
	"errors"
	"os"
	"strings"
	"testing"
)

func TestParseWhoami(t *testing.T) {
	cases := []struct {
		out  string
		code int
		want Login
	}{
		{"Not logged in\n", 1, Login{}},
		{"Logged in with Builder ID\n", 0, Login{LoggedIn: true, Method: "Builder ID"}},
		{"Logged in with IAM Identity Center (https://my.awsapps.com/start)\n", 0,
			Login{LoggedIn: true, Method: "IAM Identity Center", Detail: "https://my.awsapps.com/start"}},
		{"Authenticated with API key\n", 0, Login{LoggedIn: true, Method: "API key"}},
		{`{"accountType":"BuilderId"}`, 0, Login{LoggedIn: true, Method: "BuilderId"}},
		{"null\n", 1, Login{}},
		{"Logged in with Builder ID\n", 1, Login{}},
		{"", 0, Login{}},
	}
	for _, c := range cases {
		if got := ParseWhoami(c.out, c.code); got != c.want {
			t.Errorf("%q exit %d: %+v, want %+v", c.out, c.code, got, c.want)
		}
	}
}

func FuzzParseWhoami(f *testing.F) {
	f.Add("Logged in with IAM Identity Center (https://x)", 0)
	f.Add(`{"accountType":"IamIdentityCenter","startUrl":"u"}`, 0)
	f.Add("Not logged in", 1)
	f.Fuzz(func(t *testing.T, out string, code int) {
		l := ParseWhoami(out, code)
		if l.LoggedIn && code != 0 {
			t.Fatalf("%q exit %d: logged in", out, code)
		}
		if strings.HasPrefix(strings.TrimSpace(out), "Not logged in") && l.LoggedIn {
			t.Fatalf("%q: logged in", out)
		}
	})
}

func TestCheckLogin(t *testing.T) {
	// The agent's environment: the test's without its credential variables, and vars.
	env := func(vars map[string]string) []string {
		var e []string
		for _, kv := range os.Environ() {
			if k, _, _ := strings.Cut(kv, "="); k != "KIRO_API_KEY" && k != "AMAZON_Q_SIGV4" {
				e = append(e, kv)
			}
		}
		for k, v := range vars {
			e = append(e, k+"="+v)
		}
		return e
	}
	if _, err := CheckLogin(t.Context(), "qkit-no-such-agent", env(nil)); !errors.As(err, new(*MissingCommandError)) {
		t.Fatalf("missing binary: %v", err)
	}
	// The credentials that need no whoami, even for a command that does not exist.
	for _, v := range []map[string]string{{"KIRO_API_KEY": "k"}, {"AMAZON_Q_SIGV4": "1"}} {
		if l, err := CheckLogin(t.Context(), "qkit-no-such-agent", env(v)); err != nil || !l.LoggedIn {
			t.Fatalf("%v: %+v %v", v, l, err)
		}
	}
	l := fake(t, "FAKEQ_LOGGED_OUT=")
	if login, err := CheckLogin(t.Context(), l.Command, env(nil)); err != nil || !login.LoggedIn {
		t.Fatalf("logged in: %+v %v", login, err)
	}
	t.Setenv("FAKEQ_LOGGED_OUT", "1")
	var le *LoginError
	if _, err := CheckLogin(t.Context(), l.Command, env(nil)); !errors.As(err, &le) || !strings.Contains(err.Error(), "login") {
		t.Fatalf("logged out: %v", err)
	}
}
