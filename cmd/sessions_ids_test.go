//go:build !qkit_lite

package cmd

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/qkit-cli/qkit/internal/sessions"
)

// A session stored before ids were checked may have any text as its id (an agent's session id
// with escapes): list, show, export's message and the ambiguous-prefix error print it made
// visible, never the raw control characters.
func TestSessionsPrintStoredIDsVisibly(t *testing.T) {
	a, out, errOut := testApp(t)
	st, err := openSessions(context.Background(), a)
	if err != nil {
		t.Fatal(err)
	}
	const hostile = "sid\x1b]0;PWNED\x07\x1b[2Jx"
	for _, id := range []string{hostile, hostile + "2"} {
		if _, err := st.Record(context.Background(), sessions.Exchange{ID: id, Origin: sessions.OriginAsk, Cwd: t.TempDir(),
			Backend: sessions.BackendACP, Turn: sessions.Turn{Prompt: "hi", Reply: "hello"}}, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	if err := runSessionsList(t.Context(), a, &sessionsListOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := runSessionsShow(t.Context(), a, hostile+"2", &sessionsShowOptions{}); err != nil {
		t.Fatal(err)
	}
	err = runSessionsShow(t.Context(), a, "sid", &sessionsShowOptions{})
	if err == nil || !strings.Contains(err.Error(), "give more of it") {
		t.Fatalf("ambiguous prefix: %v", err)
	}
	for name, s := range map[string]string{"stdout": out.String(), "stderr": errOut.String(), "error": err.Error()} {
		if strings.ContainsAny(s, "\x1b\x07") {
			t.Errorf("%s holds a control character: %q", name, s)
		}
	}
	if !strings.Contains(out.String(), "sid") {
		t.Errorf("list and show printed no session: %q", out.String())
	}
}
