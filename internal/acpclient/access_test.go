package acpclient

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// accessLog records what Options.Access was asked, and answers with decide.
type accessLog struct {
	mu     sync.Mutex
	asked  []Access
	decide func(Access) error
}

func (l *accessLog) access(_ context.Context, a Access) error {
	l.mu.Lock()
	l.asked = append(l.asked, a)
	l.mu.Unlock()
	return l.decide(a)
}

// onlyGranted serves what a granted permission covers, and refuses the rest.
func onlyGranted(a Access) error {
	if a.Granted == nil {
		return fmt.Errorf("refused to %s: nothing allowed it", a)
	}
	return nil
}

// unasked runs the fake (acp-go-sdk's agent side) sending the requests of FAKEQ_ACP_UNASKED, with
// qkit's own DirFiles and DirTerminals behind Access, and returns the run, what Access was asked,
// and how the agent saw each request answered (its FAKEQ_ACP_RAN lines).
func unasked(t *testing.T, decide func(Access) error, env ...string) unaskedRun {
	t.Helper()
	ranFile := filepath.Join(t.TempDir(), "ran")
	o := fake(t, append(env, "FAKEQ_ACP_RAN="+ranFile, "FAKEQ_OUTPUT=done\n")...)
	log := &accessLog{decide: decide}
	terms := &DirTerminals{Root: o.Request.Dir}
	defer terms.Close()
	o.Files, o.Terminals, o.Access = &DirFiles{Root: o.Request.Dir}, terms, log.access
	o.Permission = allow("allow_once")
	res, err := Run(t.Context(), o)
	data, _ := os.ReadFile(ranFile)
	return unaskedRun{res, err, log.asked, strings.Split(strings.TrimSpace(string(data)), "\n"), o.Request.Dir}
}

// unaskedRun is what unasked returns.
type unaskedRun struct {
	res   Result
	err   error
	asked []Access
	ran   []string
	dir   string
}

// TestUnaskedRequestsRefused: a write and a command the agent sends without asking permission
// reach Access with no grant; refused, the agent gets Access's error as a JSON-RPC error (the
// request was not served), nothing is written or run, and the turn goes on. The agent is the
// official Go SDK's agent side (fakeq).
func TestUnaskedRequestsRefused(t *testing.T) {
	u := unasked(t, onlyGranted, "FAKEQ_ACP_UNASKED=write:out.txt,shell:touch ran-it")
	res, asked, ran, dir := u.res, u.asked, u.ran, u.dir
	if err := u.err; err != nil {
		t.Fatal(err)
	}
	if len(asked) != 2 || asked[0].Method != "fs/write_text_file" || asked[0].Path != filepath.Join(dir, "out.txt") || asked[0].Granted != nil ||
		asked[0].Tool.Kind != "edit" || asked[1].Method != "terminal/create" || !slices.Equal(asked[1].Command, []string{"sh", "-c", "touch ran-it"}) ||
		asked[1].Granted != nil || asked[1].Tool.Kind != "execute" {
		t.Fatalf("asked %+v", asked)
	}
	why := "refused to write " + filepath.Join(dir, "out.txt") + ": nothing allowed it"
	wantWrite := `unasked write:out.txt: refused: {"code":-32602,"message":"` + why + `","data":{"details":"` + why + `"}}`
	why = `refused to run sh -c \"touch ran-it\": nothing allowed it`
	wantShell := `unasked shell:touch ran-it: refused: {"code":-32602,"message":"` + why + `","data":{"details":"` + why + `"}}`
	if !slices.Equal(ran, []string{wantWrite, wantShell}) {
		t.Errorf("the agent saw\n%q\nwant\n%q", ran, []string{wantWrite, wantShell})
	}
	for _, f := range []string{"out.txt", "ran-it"} {
		if _, err := os.Stat(filepath.Join(dir, f)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s exists: the refused request was served", f)
		}
	}
	// The turn went on: the agent reported the calls failed and answered.
	if res.StopReason != "end_turn" || res.Output != "done\n" || len(res.Tools) != 2 || res.Tools[0].Status != "failed" || res.Tools[1].Status != "failed" {
		t.Errorf("result %+v", res)
	}
}

// TestGrantedPermissionCovers: a request made while a tool call whose permission was granted in
// this turn runs carries that call (Access.Granted) when the kinds agree: a write in an edit, a
// command in an execute; not a command in an edit. When the request names another tool call in
// its _meta, the grant does not cover it; naming the granted one does.
func TestGrantedPermissionCovers(t *testing.T) {
	u := unasked(t, onlyGranted, "FAKEQ_ACP_TOOLS=write:a.txt,shell:echo hi", "FAKEQ_ACP_V3=1",
		"FAKEQ_ACP_UNASKED=write:b.txt@1,shell:touch in-edit@1,write:c.txt@2,shell:touch in-shell@2")
	asked, ran, dir := u.asked, u.ran, u.dir
	if err := u.err; err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range asked {
		id := "none"
		if a.Granted != nil {
			id = a.Granted.ID + " " + a.Granted.Kind
		}
		got = append(got, a.String()+" granted by "+id)
	}
	want := []string{
		"write " + filepath.Join(dir, "b.txt") + " granted by tooluse_fakeq1 edit",
		`run sh -c "touch in-edit" granted by none`,
		"write " + filepath.Join(dir, "a.txt") + " granted by tooluse_fakeq1 edit", // the V3 tool's own write
		"write " + filepath.Join(dir, "c.txt") + " granted by none",
		`run sh -c "touch in-shell" granted by tooluse_fakeq2 execute`,
		`run sh -c "echo hi" granted by tooluse_fakeq2 execute`, // the V3 tool's own command
	}
	if !slices.Equal(got, want) {
		t.Errorf("asked\n%q\nwant\n%q", got, want)
	}
	for f, served := range map[string]bool{"a.txt": true, "b.txt": true, "c.txt": false, "in-edit": false, "in-shell": true} {
		if _, err := os.Stat(filepath.Join(dir, f)); (err == nil) != served {
			t.Errorf("%s: served %v, want %v (agent saw %q)", f, err == nil, served, ran)
		}
	}

}

// TestGrantByToolCallID: a request that names another tool call in its _meta is not covered by
// the running call's grant; one that names the granted call is.
func TestGrantByToolCallID(t *testing.T) {
	t.Run("another call", func(t *testing.T) {
		asked := unasked(t, onlyGranted, "FAKEQ_ACP_TOOLS=write:a.txt", "FAKEQ_ACP_UNASKED=write:b.txt@1", "FAKEQ_ACP_UNASKED_META=tooluse_other").asked
		if len(asked) != 1 || asked[0].ToolCallID != "tooluse_other" || asked[0].Granted != nil {
			t.Errorf("asked %+v", asked)
		}
	})
	t.Run("the granted call", func(t *testing.T) {
		asked := unasked(t, onlyGranted, "FAKEQ_ACP_TOOLS=write:a.txt", "FAKEQ_ACP_UNASKED=write:b.txt@1", "FAKEQ_ACP_UNASKED_META=tooluse_fakeq1").asked
		if len(asked) != 1 || asked[0].Granted == nil || asked[0].Granted.ID != "tooluse_fakeq1" {
			t.Errorf("asked %+v", asked)
		}
	})
}

// TestGrantEndsWithItsCall: once the granted tool call has ended, its permission covers nothing
// more; a later request of the same kind is unasked.
func TestGrantEndsWithItsCall(t *testing.T) {
	u := unasked(t, onlyGranted, "FAKEQ_ACP_TOOLS=write:a.txt", "FAKEQ_ACP_UNASKED=write:b.txt")
	asked, dir := u.asked, u.dir
	if err := u.err; err != nil {
		t.Fatal(err)
	}
	if len(asked) != 1 || asked[0].Granted != nil {
		t.Errorf("asked %+v", asked)
	}
	if _, err := os.Stat(filepath.Join(dir, "b.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Error("b.txt was written on a finished call's permission")
	}
}

// TestNoAccessServesAll: without Options.Access (a proxy, whose editor decides) every request is
// served as before.
func TestNoAccessServesAll(t *testing.T) {
	t.Parallel()
	ranFile := filepath.Join(t.TempDir(), "ran")
	o := fake(t, "FAKEQ_ACP_UNASKED=write:out.txt", "FAKEQ_ACP_RAN="+ranFile)
	o.Files = &DirFiles{Root: o.Request.Dir}
	if _, err := Run(t.Context(), o); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(ranFile); string(data) != "unasked write:out.txt: served\n" {
		t.Errorf("ran %q", data)
	}
}
