package main

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// The ACP registry lists an agent from acp-registry/<id>/agent.json and icon.svg. These tests keep
// both in step with .goreleaser.yaml (the archives the entry points at are the ones a release
// makes) and with the registry's own checks: a lower-case id equal to the folder's name, a version
// x.y.z used in every archive URL, a binary for every platform the release builds, and a 16x16
// square icon in currentColor only.

// registryEntry is agent.json as the registry reads it; an unknown field is an error.
type registryEntry struct {
	ID           string   `json:"id"`
	Name         string   `json:"name"`
	Version      string   `json:"version"`
	Description  string   `json:"description"`
	Repository   string   `json:"repository"`
	Website      string   `json:"website"`
	Authors      []string `json:"authors"`
	License      string   `json:"license"`
	Distribution struct {
		Binary map[string]registryBinary `json:"binary"`
	} `json:"distribution"`
}

type registryBinary struct {
	Archive string            `json:"archive"`
	Cmd     string            `json:"cmd"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env,omitempty"`
}

// goreleaser is the part of .goreleaser.yaml the entry follows.
type goreleaser struct {
	ProjectName string `yaml:"project_name"`
	Builds      []struct {
		ID     string   `yaml:"id"`
		Binary string   `yaml:"binary"`
		Goos   []string `yaml:"goos"`
		Goarch []string `yaml:"goarch"`
		Ignore []struct {
			Goos   string `yaml:"goos"`
			Goarch string `yaml:"goarch"`
		} `yaml:"ignore"`
	} `yaml:"builds"`
	Archives []struct {
		IDs             []string `yaml:"ids"`
		Formats         []string `yaml:"formats"`
		NameTemplate    string   `yaml:"name_template"`
		WrapInDirectory any      `yaml:"wrap_in_directory"`
		FormatOverrides []struct {
			Goos    string   `yaml:"goos"`
			Formats []string `yaml:"formats"`
		} `yaml:"format_overrides"`
	} `yaml:"archives"`
	Nfpms []struct {
		Homepage string `yaml:"homepage"`
		License  string `yaml:"license"`
	} `yaml:"nfpms"`
}

// registryDir is the entry's folder.
const registryDir = "acp-registry/qkit"

// registryArgs start qkit as the ACP agent: acp serve, with its feature gate on for this run (a
// fresh install has acp.enabled false). testscripts/acp_auth.txtar runs them.
var registryArgs = []string{"--set", "acp.enabled=true", "acp", "serve"}

// The registry's platform names for goreleaser's GOOS and GOARCH.
var (
	registryOS   = map[string]string{"darwin": "darwin", "linux": "linux", "windows": "windows"}
	registryArch = map[string]string{"amd64": "x86_64", "arm64": "aarch64"}
)

func readGoreleaser(t *testing.T) goreleaser {
	t.Helper()
	data, err := os.ReadFile(".goreleaser.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var g goreleaser
	if err := yaml.Unmarshal(data, &g); err != nil {
		t.Fatalf(".goreleaser.yaml: %v", err)
	}
	if len(g.Builds) != 1 || len(g.Archives) != 1 || len(g.Nfpms) != 1 {
		t.Fatalf(".goreleaser.yaml: %d builds, %d archives, %d nfpms: this test knows one of each", len(g.Builds), len(g.Archives), len(g.Nfpms))
	}
	return g
}

func readEntry(t *testing.T) registryEntry {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(registryDir, "agent.json"))
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var e registryEntry
	if err := dec.Decode(&e); err != nil {
		t.Fatalf("agent.json: %v", err)
	}
	return e
}

// archiveName renders goreleaser's name_template for one platform; a template using anything
// else fails, so that this test is taught about it.
func archiveName(t *testing.T, template, project, version, goos, goarch string) string {
	t.Helper()
	name := template
	for k, v := range map[string]string{".ProjectName": project, ".Version": version, ".Os": goos, ".Arch": goarch} {
		name = regexp.MustCompile(`\{\{\s*`+regexp.QuoteMeta(k)+`\s*\}\}`).ReplaceAllString(name, v)
	}
	if strings.Contains(name, "{{") {
		t.Fatalf("name_template %q: this test renders only .ProjectName, .Version, .Os and .Arch", template)
	}
	return name
}

func TestRegistryEntryFollowsGoreleaser(t *testing.T) {
	g := readGoreleaser(t)
	e := readEntry(t)

	if !regexp.MustCompile(`^[a-z][a-z0-9-]*$`).MatchString(e.ID) || e.ID != filepath.Base(registryDir) {
		t.Errorf("id %q: lower-case letters, digits and hyphens, starting with a letter, and the folder's name %q", e.ID, filepath.Base(registryDir))
	}
	if !regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+$`).MatchString(e.Version) {
		t.Errorf("version %q: the registry takes x.y.z, numbers only", e.Version)
	}
	if e.Name == "" || e.Description == "" || len(e.Authors) == 0 {
		t.Errorf("name, description and authors are required: %+v", e)
	}
	if e.License != g.Nfpms[0].License || e.Repository != g.Nfpms[0].Homepage {
		t.Errorf("license %q and repository %q: .goreleaser.yaml says %q and %q", e.License, e.Repository, g.Nfpms[0].License, g.Nfpms[0].Homepage)
	}
	if lic, err := os.ReadFile("LICENSE"); err != nil || e.License == "Apache-2.0" && !bytes.Contains(lic, []byte("Apache License")) {
		t.Errorf("LICENSE is not the license agent.json names (%s): %v", e.License, err)
	}

	build, arch := g.Builds[0], g.Archives[0]
	if !slices.Contains(arch.IDs, build.ID) || arch.WrapInDirectory != nil {
		t.Fatalf("the archive must hold build %q at its top (ids %v, wrap_in_directory %v): cmd names the binary there", build.ID, arch.IDs, arch.WrapInDirectory)
	}
	want := map[string]registryBinary{}
	for _, goos := range build.Goos {
		for _, goarch := range build.Goarch {
			if slices.ContainsFunc(build.Ignore, func(i struct {
				Goos   string `yaml:"goos"`
				Goarch string `yaml:"goarch"`
			}) bool {
				return i.Goos == goos && i.Goarch == goarch
			}) {
				continue
			}
			os, okOS := registryOS[goos]
			cpu, okArch := registryArch[goarch]
			if !okOS || !okArch {
				t.Fatalf("goreleaser builds %s/%s, which has no ACP registry platform", goos, goarch)
			}
			format := arch.Formats[0]
			for _, o := range arch.FormatOverrides {
				if o.Goos == goos {
					format = o.Formats[0]
				}
			}
			cmd := "./" + build.Binary
			if goos == "windows" {
				cmd = build.Binary + ".exe"
			}
			name := archiveName(t, arch.NameTemplate, g.ProjectName, e.Version, goos, goarch) + "." + format
			want[os+"-"+cpu] = registryBinary{
				Archive: fmt.Sprintf("%s/releases/download/v%s/%s", g.Nfpms[0].Homepage, e.Version, name),
				Cmd:     cmd,
				Args:    registryArgs,
			}
		}
	}
	if !reflect.DeepEqual(e.Distribution.Binary, want) {
		got, _ := json.MarshalIndent(e.Distribution.Binary, "", "  ")
		exp, _ := json.MarshalIndent(want, "", "  ")
		t.Errorf("distribution.binary is not what .goreleaser.yaml releases:\n%s\nwant:\n%s", got, exp)
	}
	for platform, b := range e.Distribution.Binary {
		if strings.Contains(b.Archive, "/latest/") || !strings.Contains(b.Archive, "/v"+e.Version+"/") {
			t.Errorf("%s: %s must name the version, never latest", platform, b.Archive)
		}
	}
}

// TestRegistryIcon: a 16x16 square SVG whose fills and strokes are currentColor (or none, or
// inherit), as the registry checks it, so that editors can draw it in their theme's colour.
func TestRegistryIcon(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(registryDir, "icon.svg"))
	if err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(bytes.NewReader(data))
	root, painted := true, false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("icon.svg: %v", err)
		}
		el, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		attr := map[string]string{}
		for _, a := range el.Attr {
			attr[a.Name.Local] = a.Value
		}
		if root {
			root = false
			size := attr["width"] == "16" && attr["height"] == "16" || attr["width"] == "" && attr["height"] == ""
			if el.Name.Local != "svg" || !size || attr["viewBox"] != "0 0 16 16" {
				t.Errorf("root <%s width=%q height=%q viewBox=%q>: want an svg of 16x16, viewBox \"0 0 16 16\"", el.Name.Local, attr["width"], attr["height"], attr["viewBox"])
			}
		}
		if el.Name.Local == "style" || attr["style"] != "" || attr["color"] != "" || attr["stop-color"] != "" {
			t.Errorf("<%s>: colours only through fill and stroke", el.Name.Local)
		}
		for _, paint := range []string{"fill", "stroke"} {
			v, set := attr[paint]
			switch {
			case !set:
			case v == "currentColor":
				painted = true
			case v == "none" || v == "inherit":
			default:
				t.Errorf("<%s %s=%q>: only currentColor, none or inherit", el.Name.Local, paint, v)
			}
		}
	}
	if !painted {
		t.Error("nothing is painted in currentColor")
	}
}
