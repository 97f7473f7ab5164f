package acpclient

import (
	"errors"
	"strings"
	"testing"

	acp "github.com/coder/acp-go-sdk"
)

// The errors of a refused mode or model name what the agent offered: its mode ids and its config
// option id, which reach stderr (qkit ask --agent). An agent's id holding escape sequences comes
// out visible, never as the control characters themselves; the name asked for (which an ACP client
// can send) too.
func TestRefusalErrorsAreVisible(t *testing.T) {
	refused := errors.New("unknown mode")
	modes := &acp.SessionModeState{AvailableModes: []acp.SessionMode{
		{Id: "default"}, {Id: "ev\x1b]0;PWNED\x07il"}, {Id: "p\u009b2J\u202elan\nx"},
	}}
	for _, c := range []struct {
		err  error
		want string
	}{
		{modeRefused("foo", modes, refused), `its modes are [default ev\x1b]0;PWNED\x07il p\u009b2J\u202elan\x0ax]): unknown mode`},
		{modeRefused("f\x1b[2Joo\u202e", modes, refused), `mode "f\x1b[2Joo\u202e"`},
		{modeRefused("foo", nil, refused), `mode "foo" (session/set_mode; it offers no modes): unknown mode`},
		{configRefused("m\x1b[2J", "mo\x1b]0;x\x07del", refused), `model "m\x1b[2J" (session/set_config_option mo\x1b]0;x\x07del): unknown mode`},
	} {
		msg := c.err.Error()
		if !strings.Contains(msg, c.want) || strings.ContainsAny(msg, "\x1b\x07\n\u009b\u202e") {
			t.Errorf("error %q, want it to hold %q and no control character", msg, c.want)
		}
		if !errors.Is(c.err, refused) {
			t.Errorf("error %q does not wrap the agent's refusal", msg)
		}
	}
}
