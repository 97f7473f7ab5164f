package questionsweb

import (
	"context"
	"io"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/qkit-cli/qkit/internal/acpclient"
	"github.com/qkit-cli/qkit/internal/agent"
	"github.com/qkit-cli/qkit/internal/approval"
	"github.com/qkit-cli/qkit/internal/questions"
)

// An approval that `qkit ask` on the ACP backend puts to the questions store shows on the page like
// any set, and the choice made there is the decision the run gets.
func TestApprovalsShowAndAreDecidedOnThePage(t *testing.T) {
	f := serve(t)
	c := f.browser(t)
	asker := &approval.StoreAsker{Store: f.st, Timeout: time.Minute}
	decided := make(chan string, 1)
	go func() {
		d, err := asker.AskPermission(context.Background(), acpclient.PermissionRequest{
			Tool: agent.ToolCall{ID: "t1", Title: "Running: rm -rf build", Kind: "execute"},
		})
		if err != nil {
			t.Error(err)
		}
		decided <- d
	}()
	sess, err := f.st.WaitPending(context.Background(), questions.WaitPendingOptions{Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Get(f.base)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	for _, want := range []string{`id="set-` + sess.ID, "Permission", "The agent asks to run &#34;Running: rm -rf build&#34; (execute).",
		`type="radio" name="q0" value="Allow once"`, "by ask"} {
		if !strings.Contains(string(body), want) {
			t.Fatalf("the page lacks %q:\n%s", want, body)
		}
	}
	if r := post(t, c, f.base+"sets/"+sess.ID+"/answer", url.Values{"csrf": {f.csrf}, "q0": {approval.LabelAllowOnce}}, nil); r.code != 200 {
		t.Fatalf("%+v", r)
	}
	if d := <-decided; d != approval.AllowOnce {
		t.Fatalf("decision %q", d)
	}
}
