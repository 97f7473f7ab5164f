package config

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

// kindType is the Go type each kind of setting is read as.
var kindType = map[Kind]reflect.Type{
	String: reflect.TypeOf(""), Bool: reflect.TypeOf(false), Int: reflect.TypeOf(int64(0)),
	Duration: reflect.TypeOf(time.Duration(0)), Size: reflect.TypeOf(int64(0)), List: reflect.TypeOf([]string(nil)),
}

// TestSettingHandles: every typed handle names a key of Keys and reads it as that key's kind, and
// every key has exactly one handle.
func TestSettingHandles(t *testing.T) {
	seen := map[string]int{}
	for _, h := range handles {
		seen[h.name()]++
		k, ok := LookupKey(h.name())
		if !ok {
			t.Errorf("handle %q names no setting", h.name())
			continue
		}
		if got := reflect.TypeOf(h.zero()); got != kindType[k.Kind] {
			t.Errorf("handle %q reads a %v, but the setting is a %s (%v)", h.name(), got, k.Kind, kindType[k.Kind])
		}
	}
	for _, k := range Keys {
		if seen[k.Name] != 1 {
			t.Errorf("setting %q has %d handles in settings.go, want 1", k.Name, seen[k.Name])
		}
	}
	c, err := Load(LoadOptions{LookupEnv: envOf(map[string]string{"QKIT_HOME": t.TempDir()})})
	if err != nil {
		t.Fatal(err)
	}
	if AgentTimeout.Get(c) != 180*time.Second || AgentCommand.Get(c) != "q" || !AgentStripANSI.Get(c) {
		t.Errorf("defaults through the handles: %v %q %v", AgentTimeout.Get(c), AgentCommand.Get(c), AgentStripANSI.Get(c))
	}
	if d, err := AgentTimeout.Parse("90"); err != nil || d != 90*time.Second {
		t.Errorf("AgentTimeout.Parse(90) = %v, %v", d, err)
	}
	if _, err := AgentMaxResponseSize.Parse("100GB"); err == nil {
		t.Error("AgentMaxResponseSize.Parse takes a size over the setting's range")
	}
}

// TestNoSettingReadByName: product code reads settings only through the typed handles, never by a
// name in a string (a typo or a wrong type there panicked at run time): no call outside the handle
// definitions passes a setting's name as a string literal.
func TestNoSettingReadByName(t *testing.T) {
	root := filepath.Join("..", "..")
	names := map[string]bool{}
	for _, k := range Keys {
		names[k.Name] = true
	}
	fset := token.NewFileSet()
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		files++
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			if ix, ok := call.Fun.(*ast.IndexExpr); ok && f.Name.Name == "config" {
				if id, ok := ix.X.(*ast.Ident); ok && id.Name == "setting" {
					return true // a handle's definition: setting[T]("agent.timeout")
				}
			}
			for _, arg := range call.Args {
				lit, ok := arg.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					continue
				}
				if name, _ := strconv.Unquote(lit.Value); names[name] {
					t.Errorf("%s: setting %q named in a string; use its handle (settings.go)", fset.Position(lit.Pos()), name)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 50 {
		t.Fatalf("only %d Go files scanned: the walk is broken", files)
	}
}
