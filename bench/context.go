//go:build linux

package main

import (
	"fmt"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// contextSuite measures the context figures:
//   - expansion of **/*.md over generated trees of 10,000 and 100,000 files (3% matching): the median
//     of `qkit context show --json` against a plain filepath.WalkDir over the same tree, both as a
//     process (a small Go program, so process start-up is on both sides) and, for reference, in this
//     process;
//   - building the prompt block from 200 files totalling 20 MB (`qkit context prompt`): peak RSS
//     against 2x the bytes included plus 20 MB.
func contextSuite(b *bench) ([]figure, error) {
	root := filepath.Join(b.dir, "context")
	walker, err := buildWalker(root)
	if err != nil {
		return nil, err
	}
	var figs []figure
	for _, size := range []struct {
		label string
		files int
		runs  int
	}{{"10k", 10_000, 15}, {"100k", 100_000, 7}} {
		fs, err := expansionFigures(b, root, walker, size.label, size.files, size.runs)
		if err != nil {
			return nil, err
		}
		figs = append(figs, fs...)
	}
	fs, err := promptMemoryFigures(b, root)
	if err != nil {
		return nil, err
	}
	return append(figs, fs...), nil
}

// genTree writes n files under dir, 100 per folder in a tree three levels deep; every 33rd is a
// small .md file (3%), the rest are empty .go and .txt files.
func genTree(dir string, n int) (matching int, err error) {
	for i := 0; i < n; i++ {
		leaf := i / 100
		d := filepath.Join(dir, fmt.Sprintf("d%d", leaf/100), fmt.Sprintf("e%d", leaf/10%10), fmt.Sprintf("f%d", leaf%10))
		if i%100 == 0 {
			if err := os.MkdirAll(d, 0o755); err != nil {
				return 0, err
			}
		}
		name, content := fmt.Sprintf("file%d.go", i), ""
		switch {
		case i%33 == 0:
			name, content = fmt.Sprintf("doc%d.md", i), fmt.Sprintf("# doc %d\n\nSome words.\n", i)
			matching++
		case i%2 == 0:
			name = fmt.Sprintf("note%d.txt", i)
		}
		if err := os.WriteFile(filepath.Join(d, name), []byte(content), 0o644); err != nil {
			return 0, err
		}
	}
	return matching, nil
}

const walkerSource = `package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

func main() {
	n := 0
	_ = filepath.WalkDir(os.Args[1], func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			n++
		}
		return nil
	})
	fmt.Println(n)
}
`

// buildWalker builds the baseline: a program that walks a tree with filepath.WalkDir and counts the
// .md files.
func buildWalker(root string) (string, error) {
	src := filepath.Join(root, "walker-src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(src, "main.go"), []byte(walkerSource), 0o644); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(src, "go.mod"), []byte("module walker\n\ngo 1.25\n"), 0o644); err != nil {
		return "", err
	}
	bin := filepath.Join(root, "walker")
	c := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", bin, ".")
	c.Dir = src
	c.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := c.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build walker: %v\n%s", err, out)
	}
	return bin, nil
}

func expansionFigures(b *bench, root, walker, label string, n, runs int) ([]figure, error) {
	tree := filepath.Join(root, "tree"+label)
	matching, err := genTree(tree, n)
	if err != nil {
		return nil, err
	}
	env := b.env(filepath.Join(root, "home"+label))
	add := exec.Command(b.qkit, "context", "add", "**/*.md")
	add.Env, add.Dir = env, tree
	if out, err := add.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("context add: %v: %s", err, out)
	}
	out, err := runOut(env, tree, b.qkit, "context", "show", "--json")
	if err != nil {
		return nil, err
	}
	if got := strings.Count(out, `"scope": "profile"`); got != matching {
		return nil, fmt.Errorf("context show matched %d files, want %d", got, matching)
	}
	if _, err := timeRuns(2, env, tree, walker, tree); err != nil { // warm the page cache
		return nil, err
	}
	show, err := timeRuns(runs, env, tree, b.qkit, "context", "show", "--json")
	if err != nil {
		return nil, err
	}
	walk, err := timeRuns(runs, env, tree, walker, tree)
	if err != nil {
		return nil, err
	}
	inProc := medianOf(runs, func() { _ = filepath.WalkDir(tree, func(string, fs.DirEntry, error) error { return nil }) })
	p := "context: " + label + " files, **/*.md"
	return []figure{
		info(p+": qkit context show --json median", ms(show), "ms"),
		info(p+": filepath.WalkDir process median", ms(walk), "ms"),
		atMost(p+": show / WalkDir process", float64(show)/float64(walk), "x", 2),
		info(p+": filepath.WalkDir in-process median", ms(inProc), "ms"),
		info(p+": show / WalkDir in-process", float64(show)/float64(inProc), "x"),
	}, nil
}

func medianOf(n int, fn func()) time.Duration {
	ds := make([]time.Duration, n)
	for i := range ds {
		start := time.Now()
		fn()
		ds[i] = time.Since(start)
	}
	return median(ds)
}

// promptMemoryFigures: 200 files of 100 KB (20 MB) in one profile, prompt built and written to
// /dev/null; the peak RSS is compared with 2x the bytes included plus 20 MB.
func promptMemoryFigures(b *bench, root string) ([]figure, error) {
	dir := filepath.Join(root, "prompt")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	line := strings.Repeat("context file text, ", 5) + "\n"
	content := strings.Repeat(line, 100_000/len(line)+1)[:100_000]
	const files = 200
	for i := 0; i < files; i++ {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%03d.md", i)), []byte(content), 0o644); err != nil {
			return nil, err
		}
	}
	included := int64(files * len(content))
	env := b.env(filepath.Join(root, "home-prompt"), "QKIT_CONTEXT_MAX_TOKENS=100000000")
	add := exec.Command(b.qkit, "context", "add", "*.md")
	add.Env, add.Dir = env, dir
	if out, err := add.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("context add: %v: %s", err, out)
	}
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		return nil, err
	}
	defer devnull.Close()
	var peak int64
	for i := 0; i < 3; i++ {
		c := exec.Command(b.qkit, "context", "prompt", "hi")
		c.Env, c.Dir, c.Stdout = env, dir, devnull
		rss, err := peakRSS(c)
		if err != nil {
			return nil, fmt.Errorf("context prompt: %v", err)
		}
		peak = max(peak, rss)
	}
	base := exec.Command(b.qkit, "version")
	base.Env, base.Dir = env, dir
	baseRSS, err := peakRSS(base)
	if err != nil {
		return nil, err
	}
	mb := func(n int64) float64 { return math.Round(float64(n)/(1<<20)*10) / 10 }
	limit := 2*included + 20<<20
	return []figure{
		info("context: prompt block, 200 files / 20 MB: bytes included", mb(included), "MiB"),
		atMost("context: prompt block, 200 files / 20 MB: peak RSS", mb(peak), "MiB", mb(limit)),
		info("context: qkit version peak RSS (for reference)", mb(baseRSS), "MiB"),
	}, nil
}
