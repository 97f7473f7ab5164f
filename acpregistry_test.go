package main

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/qkit-cli/qkit/internal/fullbin"
)

// The ACP registry lists an agent from acp-registry/<id>/agent.json and icon.svg. These tests keep
// both in step with .goreleaser.yaml (the archives the entry points at are the ones a release
// makes) and with the registry's own checks: a lower-case id equal to the folder's name, a version
// x.y.z used in every archive URL, a binary for every platform the release builds, and a 16x16
// square icon in currentColor only. The archives' and packages' layout (the light qkit with
// qkit-full where it looks for it) is checked here too, from the same reading of the file.

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

// goreleaser is the part of .goreleaser.yaml the entry and the packages follow.
type goreleaser struct {
	ProjectName string            `yaml:"project_name"`
	Builds      []goreleaserBuild `yaml:"builds"`
	Archives    []struct {
		ID              string   `yaml:"id"`
		IDs             []string `yaml:"ids"`
		Formats         []string `yaml:"formats"`
		NameTemplate    string   `yaml:"name_template"`
		WrapInDirectory any      `yaml:"wrap_in_directory"`
		Files           []string `yaml:"files"`
		FormatOverrides []struct {
			Goos    string   `yaml:"goos"`
			Formats []string `yaml:"formats"`
		} `yaml:"format_overrides"`
	} `yaml:"archives"`
	Nfpms []struct {
		IDs      []string `yaml:"ids"`
		Homepage string   `yaml:"homepage"`
		License  string   `yaml:"license"`
		Bindir   string   `yaml:"bindir"`
		Contents []struct {
			Src string `yaml:"src"`
			Dst string `yaml:"dst"`
		} `yaml:"contents"`
	} `yaml:"nfpms"`
}

type goreleaserBuild struct {
	ID      string   `yaml:"id"`
	Binary  string   `yaml:"binary"`
	Tags    []string `yaml:"tags"`
	Flags   []string `yaml:"flags"`
	Ldflags []string `yaml:"ldflags"`
	Env     []string `yaml:"env"`
	Goos    []string `yaml:"goos"`
	Goarch  []string `yaml:"goarch"`
	Ignore  []struct {
		Goos   string `yaml:"goos"`
		Goarch string `yaml:"goarch"`
	} `yaml:"ignore"`
}

// platforms are the GOOS/GOARCH pairs the build makes.
func (b goreleaserBuild) platforms() []string {
	var out []string
	for _, goos := range b.Goos {
		for _, goarch := range b.Goarch {
			if !slices.ContainsFunc(b.Ignore, func(i struct {
				Goos   string `yaml:"goos"`
				Goarch string `yaml:"goarch"`
			}) bool {
				return i.Goos == goos && i.Goarch == goarch
			}) {
				out = append(out, goos+"/"+goarch)
			}
		}
	}
	return out
}

// light says whether the build is the light qkit (build tag qkit_lite).
func (b goreleaserBuild) light() bool { return slices.Contains(b.Tags, "qkit_lite") }

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
	if len(g.Builds) == 0 || len(g.Archives) == 0 || len(g.Nfpms) != 1 {
		t.Fatalf(".goreleaser.yaml: %d builds, %d archives, %d nfpms: this test knows builds, archives and one nfpm", len(g.Builds), len(g.Archives), len(g.Nfpms))
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

// releaseArchive is what the release archive of one platform holds at its top.
type releaseArchive struct {
	id, nameTemplate, format string
	files                    []string
	builds                   []goreleaserBuild // every build in it
	qkit                     goreleaserBuild   // the one whose binary is qkit, the command people and editors run
}

// releaseArchives maps each platform ("linux/amd64") to its archive, as goreleaser makes them:
// an archive takes the builds its ids name, one archive per platform they build. It fails when a
// platform has two archives, a build is in none, or an archive has no qkit at its top.
func releaseArchives(t *testing.T, g goreleaser) map[string]releaseArchive {
	t.Helper()
	builds := map[string]goreleaserBuild{}
	for _, b := range g.Builds {
		if b.ID == "" || builds[b.ID].ID != "" {
			t.Fatalf("build ids must be set and differ: %q", b.ID)
		}
		builds[b.ID] = b
	}
	out := map[string]releaseArchive{}
	archived := map[string]bool{}
	for i, a := range g.Archives {
		if len(a.IDs) == 0 || a.WrapInDirectory != nil || len(a.Formats) != 1 {
			t.Fatalf("archive %d (%s): ids %v, wrap_in_directory %v, formats %v: this test wants the builds named, at the archive's top (cmd names the binary there), one format",
				i, a.ID, a.IDs, a.WrapInDirectory, a.Formats)
		}
		for _, id := range a.IDs {
			b, ok := builds[id]
			if !ok {
				t.Fatalf("archive %s names build %q, which .goreleaser.yaml does not have", a.ID, id)
			}
			archived[id] = true
			for _, platform := range b.platforms() {
				goos, _, _ := strings.Cut(platform, "/")
				r, seen := out[platform]
				if seen && r.id != a.ID {
					t.Fatalf("%s is in two archives, %s and %s: the registry names one", platform, r.id, a.ID)
				}
				if !seen {
					format := a.Formats[0]
					for _, o := range a.FormatOverrides {
						if o.Goos == goos {
							format = o.Formats[0]
						}
					}
					r = releaseArchive{id: a.ID, nameTemplate: a.NameTemplate, format: format, files: a.Files}
				}
				r.builds = append(r.builds, b)
				if b.Binary == "qkit" {
					if r.qkit.ID != "" {
						t.Fatalf("%s: builds %s and %s both make qkit in archive %s", platform, r.qkit.ID, b.ID, a.ID)
					}
					r.qkit = b
				}
				out[platform] = r
			}
		}
	}
	for id := range builds {
		if !archived[id] {
			t.Errorf("build %s is in no archive", id)
		}
	}
	for platform, r := range out {
		if r.qkit.ID == "" {
			t.Fatalf("%s: archive %s has no qkit at its top", platform, r.id)
		}
	}
	return out
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

	want := map[string]registryBinary{}
	for platform, a := range releaseArchives(t, g) {
		goos, goarch, _ := strings.Cut(platform, "/")
		os, okOS := registryOS[goos]
		cpu, okArch := registryArch[goarch]
		if !okOS || !okArch {
			t.Fatalf("goreleaser builds %s, which has no ACP registry platform", platform)
		}
		cmd := "./" + a.qkit.Binary
		if goos == "windows" {
			cmd = a.qkit.Binary + ".exe"
		}
		want[os+"-"+cpu] = registryBinary{
			Archive: fmt.Sprintf("%s/releases/download/v%s/%s", g.Nfpms[0].Homepage, e.Version, archiveName(t, a.nameTemplate, g.ProjectName, e.Version, goos, goarch)+"."+a.format),
			Cmd:     cmd,
			Args:    registryArgs,
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

// TestReleaseArchivesCarryTheHelper: each unix archive holds the light qkit (tag qkit_lite) and the
// full build as qkit-full beside it, where the light binary looks first (fullbin.Candidates), so a
// release user gets the fast start and every command; the windows archive holds the full build
// alone as qkit (no exec(2) there to hand a command over). Every build is stamped alike (the
// version a forwarded command prints is the one qkit printed), and the archives keep the man
// pages, completions, README and LICENSE.
func TestReleaseArchivesCarryTheHelper(t *testing.T) {
	t.Setenv(fullbin.EnvPath, "")
	g := readGoreleaser(t)
	for _, b := range g.Builds[1:] {
		if !slices.Equal(b.Flags, g.Builds[0].Flags) || !slices.Equal(b.Ldflags, g.Builds[0].Ldflags) || !slices.Equal(b.Env, g.Builds[0].Env) {
			t.Errorf("build %s: flags %v, ldflags %v, env %v differ from build %s's", b.ID, b.Flags, b.Ldflags, b.Env, g.Builds[0].ID)
		}
	}
	beside := fullbin.Candidates(filepath.Join("top", "qkit"))[0]
	if beside != filepath.Join("top", fullbin.Name) {
		t.Fatalf("fullbin looks first at %s, not beside qkit: the archives' layout no longer fits", beside)
	}
	for platform, a := range releaseArchives(t, g) {
		var got []string
		for _, b := range a.builds {
			kind := "full"
			if b.light() {
				kind = "light"
			}
			got = append(got, b.Binary+" ("+kind+")")
		}
		slices.Sort(got)
		want := []string{fullbin.Name + " (full)", "qkit (light)"}
		if strings.HasPrefix(platform, "windows/") {
			want = []string{"qkit (full)"}
		}
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s: archive %s holds %v, want %v", platform, a.id, got, want)
		}
		for _, f := range []string{"README.md", "LICENSE", "completions/*", "man/*"} {
			if !slices.Contains(a.files, f) {
				t.Errorf("%s: archive %s does not carry %s", platform, a.id, f)
			}
		}
	}
}

// TestPackagesInstallTheHelper: the .deb and .rpm put the light qkit in bindir and qkit-full, from
// its build's folder in goreleaser's dist (dist/<build id>_<target>/), at ../libexec/qkit/ from
// there, where fullbin finds it, as make install does.
func TestPackagesInstallTheHelper(t *testing.T) {
	t.Setenv(fullbin.EnvPath, "")
	g := readGoreleaser(t)
	n := g.Nfpms[0]
	builds := map[string]goreleaserBuild{}
	for _, b := range g.Builds {
		builds[b.ID] = b
	}
	var packaged []string
	for _, id := range n.IDs {
		b := builds[id]
		packaged = append(packaged, b.Binary)
		if b.Binary != "qkit" || !b.light() || !slices.Contains(b.Goos, "linux") {
			t.Errorf("nfpm packages build %q (binary %q, tags %v, goos %v): want the light qkit built for linux", id, b.Binary, b.Tags, b.Goos)
		}
	}
	if len(packaged) != 1 {
		t.Fatalf("nfpm packages builds %v into %s: want the light qkit alone there (qkit-full goes to libexec)", n.IDs, n.Bindir)
	}
	dst := path.Join(path.Dir(n.Bindir), "libexec", "qkit", fullbin.Name)
	if !slices.Contains(fullbin.Candidates(path.Join(n.Bindir, "qkit")), filepath.FromSlash(dst)) {
		t.Fatalf("fullbin does not look for the helper at %s: %v", dst, fullbin.Candidates(path.Join(n.Bindir, "qkit")))
	}
	light := builds[n.IDs[0]]
	found := false
	for _, c := range n.Contents {
		if c.Dst != dst {
			continue
		}
		found = true
		id, ok := strings.CutSuffix(strings.TrimPrefix(c.Src, "dist/"), "_{{ .Target }}/"+fullbin.Name)
		full, known := builds[id]
		if !ok || !known || full.Binary != fullbin.Name || full.light() || !slices.Equal(full.platforms(), light.platforms()) {
			t.Errorf("%s comes from %s: want dist/<id>_{{ .Target }}/%s of the full build made for the light build's platforms", dst, c.Src, fullbin.Name)
		}
	}
	if !found {
		t.Errorf("the packages do not install %s", dst)
	}
}
