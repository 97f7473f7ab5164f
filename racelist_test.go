package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestRacePackages: the Makefile's RACE_PKGS, the packages `make race` tests under the race
// detector, are exactly the packages under internal/ whose own (non-test) code is concurrent: it
// starts a goroutine, has a channel type, or uses package sync or sync/atomic. A package that
// gains a goroutine joins the race pass by this test failing until it is listed.
func TestRacePackages(t *testing.T) {
	listed := racePkgs(t)
	var want []string
	err := filepath.WalkDir("internal", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "testdata" {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			return nil
		}
		why, err := concurrent(path)
		if err != nil {
			return err
		}
		name := filepath.ToSlash(strings.TrimPrefix(path, "internal"+string(filepath.Separator)))
		if why != "" {
			want = append(want, name)
			if !slices.Contains(listed, name) {
				t.Errorf("internal/%s is concurrent (%s) but not in the Makefile's RACE_PKGS", name, why)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range listed {
		if !slices.Contains(want, name) {
			t.Errorf("the Makefile's RACE_PKGS names internal/%s, which is no package with goroutines, channels or sync", name)
		}
	}
}

// TestFuzzCITargets: every fuzz target make test fuzzes (the Makefile's FUZZCI, package:Target)
// exists. go test -fuzz with a pattern that matches no target fuzzes nothing and passes, so a
// target moved to another package would silently leave make test.
func TestFuzzCITargets(t *testing.T) {
	for _, entry := range makeList(t, "FUZZCI") {
		dir, name, ok := strings.Cut(entry, ":")
		if !ok {
			t.Errorf("FUZZCI entry %q is not package:FuzzTarget", entry)
			continue
		}
		if !declaresFuzz(t, dir, name) {
			t.Errorf("the Makefile's FUZZCI names %s, but %s has no func %s(*testing.F) in its tests", entry, dir, name)
		}
	}
}

// declaresFuzz says whether a _test.go file in dir declares the fuzz target name.
func declaresFuzz(t *testing.T, dir, name string) bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, file := range files {
		f, err := parser.ParseFile(fset, file, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && fn.Name.Name == name && fn.Type.Params.NumFields() == 1 {
				return true
			}
		}
	}
	return false
}

// racePkgs reads RACE_PKGS from the Makefile.
func racePkgs(t *testing.T) []string { return makeList(t, "RACE_PKGS") }

// makeList reads the words of the Makefile's variable name (with its continuation lines).
func makeList(t *testing.T, name string) []string {
	t.Helper()
	data, err := os.ReadFile("Makefile")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(data), "\n"+name+" ")
	if !ok {
		t.Fatalf("the Makefile has no %s", name)
	}
	_, rest, _ = strings.Cut(rest, "=")
	var value strings.Builder
	for line := range strings.Lines(rest) {
		line = strings.TrimRight(line, "\n")
		more := strings.HasSuffix(line, `\`)
		value.WriteString(strings.TrimSuffix(line, `\`) + " ")
		if !more {
			break
		}
	}
	names := strings.Fields(value.String())
	if len(names) == 0 {
		t.Fatalf("the Makefile's %s is empty", name)
	}
	return names
}

// concurrent says why the Go package in dir (its non-test files) is concurrent, or "" when it is not.
func concurrent(dir string) (string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return "", err
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			return "", err
		}
		syncNames := map[string]bool{}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if path != "sync" && path != "sync/atomic" {
				continue
			}
			local := filepath.Base(path)
			if imp.Name != nil {
				local = imp.Name.Name
			}
			syncNames[local] = true
		}
		why := ""
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.GoStmt:
				why = "a go statement"
			case *ast.ChanType:
				why = "a channel"
			case *ast.SelectorExpr:
				if id, ok := n.X.(*ast.Ident); ok && syncNames[id.Name] {
					why = id.Name + "." + n.Sel.Name
				}
			}
			return why == ""
		})
		if why != "" {
			return why + " in " + filepath.Base(name), nil
		}
	}
	return "", nil
}
