//go:build linux

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/qkit-cli/qkit/internal/questions"
	"github.com/qkit-cli/qkit/internal/questions/dirstore"
)

// questionsWebSuite measures the newer ways to answer ask_user_questions, each against a
// call waiting in `qkit mcp serve` (Go SDK client), median of 20:
//   - an answers.json written by hand and renamed into place -> the tool result (the peer polls
//     every 200 ms; the settle delay applies only to a file still open for writing);
//   - an answer posted to `qkit questions serve` -> the tool result;
//   - a set asked -> its "set" event on the page's event stream;
//
// and the CPU `qkit questions serve` uses over 10 idle seconds with 100 pending sets and one page
// (event stream) open.
func questionsWebSuite(b *bench) ([]figure, error) {
	ctx := context.Background()
	args := langArgs
	home, st, s, err := startQuestions(ctx, b, "questions-web")
	if err != nil {
		return nil, err
	}
	defer st.Close()
	page, err := b.startPage(home)
	if err != nil {
		return nil, err
	}
	defer page.stop()
	events, err := page.stream()
	if err != nil {
		return nil, err
	}

	var file, web, shown []time.Duration
	for i := 0; i < 40; i++ {
		asked := time.Now()
		got := askInBackground(ctx, s, args)
		p, err := st.WaitPending(ctx, questions.WaitPendingOptions{Timeout: 10 * time.Second})
		if err != nil {
			return nil, err
		}
		at, err := events.await(p.ID, 10*time.Second)
		if err != nil {
			return nil, err
		}
		shown = append(shown, at.Sub(asked))
		time.Sleep(time.Duration(20+rand.IntN(80)) * time.Millisecond) // a person takes a while
		var start time.Time
		if i%2 == 0 {
			start, err = renameAnswers(filepath.Join(st.Dir(), p.ID))
		} else {
			start, err = page.answer(p.ID)
		}
		if err != nil {
			return nil, err
		}
		r := <-got
		if r.err != nil || r.res.IsError {
			return nil, fmt.Errorf("ask_user_questions: %v %+v", r.err, r.res)
		}
		if i%2 == 0 {
			file = append(file, r.at.Sub(start))
		} else {
			web = append(web, r.at.Sub(start))
		}
	}
	if _, err := s.close(); err != nil {
		return nil, err
	}
	page.stop()

	ticks, err := b.pageIdleTicks(home, st, 100)
	if err != nil {
		return nil, err
	}
	return []figure{
		atMost("questions: answers.json renamed into place -> tool result (median of 20)", ms(median(file)), "ms", 5),
		atMost("questions: answer posted to qkit questions serve -> tool result (median of 20)", ms(median(web)), "ms", 20),
		info("questions: set asked -> shown on the open page's event stream (median of 40)", ms(median(shown)), "ms"),
		atMost("questions: qkit questions serve CPU over 10 idle s, 100 pending sets, one page open", float64(ticks), "ticks", 0),
	}, nil
}

// renameAnswers writes an answer the way a careful script does: a temporary file, then a rename
// into place. It returns the moment just before the rename.
func renameAnswers(dir string) (time.Time, error) {
	tmp := filepath.Join(dir, ".answers.tmp")
	data := `{"answers":[{"questionIndex":0,"selected":["Go"]}]}`
	if err := os.WriteFile(tmp, []byte(data), 0o600); err != nil {
		return time.Time{}, err
	}
	start := time.Now()
	return start, os.Rename(tmp, filepath.Join(dir, dirstore.AnswersFile))
}

// page is a running `qkit questions serve`.
type page struct {
	cmd   *exec.Cmd
	base  string
	token string
	errb  *strings.Builder
}

func (b *bench) startPage(home string) (*page, error) {
	cmd := exec.Command(b.qkit, "questions", "serve", "--json")
	cmd.Env, cmd.Dir = b.env(home), home
	errb := &strings.Builder{}
	cmd.Stderr = errb
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("qkit questions serve: %v: %s", err, errb)
	}
	var info struct{ URL, Token string }
	if err := json.Unmarshal([]byte(line), &info); err != nil {
		return nil, err
	}
	base, _, _ := strings.Cut(info.URL, "?")
	return &page{cmd: cmd, base: base, token: info.Token, errb: errb}, nil
}

func (p *page) stop() {
	if p.cmd.ProcessState != nil {
		return
	}
	_ = p.cmd.Process.Signal(os.Interrupt)
	_ = p.cmd.Wait()
}

// answer posts the answer "Go" as the page's script does and returns the moment it was sent.
func (p *page) answer(id string) (time.Time, error) {
	form := url.Values{"csrf": {p.token}, "q0": {"Go"}}
	req, _ := http.NewRequest("POST", p.base+"sets/"+id+"/answer", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Authorization", "Bearer "+p.token)
	start := time.Now()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return start, err
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 {
		return start, fmt.Errorf("posting an answer: %d %s", res.StatusCode, body)
	}
	return start, nil
}

// eventStream is an open page's event stream: when each set was first sent.
type eventStream struct {
	body io.Closer
	seen chan seenSet
	got  map[string]time.Time
}

type seenSet struct {
	id string
	at time.Time
}

func (p *page) stream() (*eventStream, error) {
	req, _ := http.NewRequest("GET", p.base+"events", nil)
	req.Header.Set("Authorization", "Bearer "+p.token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	if res.StatusCode != 200 {
		res.Body.Close()
		return nil, fmt.Errorf("event stream: %d", res.StatusCode)
	}
	es := &eventStream{body: res.Body, seen: make(chan seenSet, 256), got: map[string]time.Time{}}
	go func() {
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		event := ""
		for sc.Scan() {
			line := sc.Text()
			if n, ok := strings.CutPrefix(line, "event: "); ok {
				event = n
				continue
			}
			if d, ok := strings.CutPrefix(line, "data: "); ok && event == "set" {
				var v struct{ ID string }
				if json.Unmarshal([]byte(d), &v) == nil {
					es.seen <- seenSet{v.ID, time.Now()}
				}
			}
		}
		close(es.seen)
	}()
	return es, nil
}

// await returns when the set was first sent on the stream.
func (es *eventStream) await(id string, limit time.Duration) (time.Time, error) {
	timeout := time.After(limit)
	for {
		if at, ok := es.got[id]; ok {
			return at, nil
		}
		select {
		case s, ok := <-es.seen:
			if !ok {
				return time.Time{}, fmt.Errorf("the event stream ended")
			}
			if _, dup := es.got[s.id]; !dup {
				es.got[s.id] = s.at
			}
		case <-timeout:
			return time.Time{}, fmt.Errorf("set %s never shown on the page", id)
		}
	}
}

// pageIdleTicks stores n pending sets, starts a page with one event stream open, lets it settle and
// returns the CPU ticks (user + system, 1/100 s) it uses over the next 10 seconds.
func (b *bench) pageIdleTicks(home string, st *dirstore.Store, n int) (int64, error) {
	set, err := questions.ParseQuestionSet([]byte(`{"questions":[{"question":"Which one?","header":"Pick","options":[{"label":"A"},{"label":"B"}]}]}`))
	if err != nil {
		return 0, err
	}
	var ids []string
	for i := 0; i < n; i++ {
		s, err := st.Create(set, questions.CreateOptions{Source: "bench"})
		if err != nil {
			return 0, err
		}
		ids = append(ids, s.ID)
	}
	defer func() {
		for _, id := range ids {
			_, _ = st.Reject(id, "bench", "")
		}
	}()
	p, err := b.startPage(home)
	if err != nil {
		return 0, err
	}
	defer p.stop()
	es, err := p.stream()
	if err != nil {
		return 0, err
	}
	defer es.body.Close()
	if _, err := es.await(ids[n-1], 30*time.Second); err != nil {
		return 0, err
	}
	time.Sleep(3 * time.Second) // settle: start-up, GC
	before, err := cpuTicks(p.cmd.Process.Pid)
	if err != nil {
		return 0, err
	}
	time.Sleep(10 * time.Second)
	after, err := cpuTicks(p.cmd.Process.Pid)
	if err != nil {
		return 0, err
	}
	return after - before, nil
}
