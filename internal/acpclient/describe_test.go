package acpclient

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/qkit-cli/qkit/internal/agent"
	"github.com/qkit-cli/qkit/internal/fakeq/fakeqtest"
)

// Describe says what `<agent> acp` answered to initialize (the fake answers as kiro-cli 2.x).
func TestDescribe(t *testing.T) {
	d, err := Describe(t.Context(), fakeqtest.Flavour(t, "kiro"), "test", 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if d.Agent != "Kiro CLI Agent 2.0.1" || d.Protocol != 1 || !slices.Equal(d.Capabilities, []string{"session/load", "images", "MCP over HTTP"}) || len(d.AuthMethods) != 0 {
		t.Fatalf("%+v", d)
	}

	// Not logged in (its kiro-login method, no KIRO_API_KEY): a LoginError, as Start gives.
	var le *agent.LoginError
	if _, err := Describe(t.Context(), fakeqtest.Flavour(t, "kiro", "FAKEQ_LOGGED_OUT=1"), "test", 200*time.Millisecond); !errors.As(err, &le) {
		t.Fatalf("logged out: %v", err)
	}
	// q 1.19.7 has no acp: not ACP.
	var na *NotACPError
	if _, err := Describe(t.Context(), fakeqtest.Flavour(t, "q"), "test", 200*time.Millisecond); !errors.As(err, &na) {
		t.Fatalf("q: %v", err)
	}
}
