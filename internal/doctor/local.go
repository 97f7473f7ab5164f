package doctor

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/kballard/go-shellquote"

	"github.com/qkit-cli/qkit/internal/config"
	"github.com/qkit-cli/qkit/internal/contextfiles"
	"github.com/qkit-cli/qkit/internal/output"
)

// shellJoin is a command line a person can paste into a shell.
func shellJoin(args ...string) string { return shellquote.Join(args...) }

// editFix is the command that opens file in the person's editor.
func editFix(file string) string { return "${EDITOR:-vi} " + shellJoin(file) }

// settingFix is the command that makes setting v take value (or its default, when value is
// empty) where its current value comes from: the environment variable is changed (or unset, for
// the default), --set is given the value, the file is changed with qkit settings.
func settingFix(v config.Value, value string) string {
	switch {
	case v.Source == config.SourceEnv && (value == "" || value == v.Key.Default):
		return "unset " + v.Origin
	case v.Source == config.SourceEnv:
		return "export " + v.Origin + "=" + shellJoin(value)
	case v.Source == config.SourceFlag:
		return "qkit " + shellJoin("--set", v.Key.Name+"="+value) + " doctor"
	case value == "":
		return "qkit settings reset " + v.Key.Name
	}
	return "qkit settings set " + shellJoin(v.Key.Name, value)
}

// checkConfig: the config file read, whether it parses, and whether its values (and the
// environment's) are valid.
func checkConfig(o Options) Check {
	c := Check{Name: CheckConfig}
	cfg := o.Config
	if o.ConfigErr != nil {
		c.Status, c.Detail, c.Fix = Fail, o.ConfigErr.Error()+"; qkit commands refuse to run until it is fixed", editFix(cfg.File)
		return c
	}
	counts := map[config.Source]int{}
	for _, v := range cfg.All() {
		counts[v.Source]++
	}
	if _, err := os.Stat(cfg.File); err == nil {
		c.Detail = fmt.Sprintf("%s parses; %s set there", cfg.File, plural(counts[config.SourceFile], "setting"))
	} else {
		c.Detail = fmt.Sprintf("no config file (%s): the defaults apply", cfg.File)
	}
	if n := counts[config.SourceEnv]; n > 0 {
		c.Detail += fmt.Sprintf(", %s from the environment", plural(n, "setting"))
	}
	if n := counts[config.SourceFlag]; n > 0 {
		c.Detail += fmt.Sprintf(", %s from --set", plural(n, "setting"))
	}
	c.Status = OK
	if len(cfg.Problems) > 0 {
		msgs := make([]string, len(cfg.Problems))
		for i, p := range cfg.Problems {
			msgs[i] = p.Error()
		}
		c.Status, c.Detail = Fail, "bad values (the commands other than settings and doctor refuse to run): "+strings.Join(msgs, "; ")
		var ve *config.ValueError
		if errors.As(cfg.Problems[0], &ve) {
			c.Fix = problemFix(cfg, ve)
		}
		return c
	}
	if len(cfg.Unknown) > 0 {
		names := make([]string, len(cfg.Unknown))
		for i, u := range cfg.Unknown {
			names[i] = string(u)
			if near := config.Suggest(string(u)); len(near) > 0 {
				names[i] += " (did you mean " + near[0] + "?)"
			}
		}
		c.Status, c.Detail, c.Fix = Warn, fmt.Sprintf("%s: not settings, ignored: %s", cfg.File, strings.Join(names, ", ")), editFix(cfg.File)
	}
	return c
}

// problemFix is the command that removes the bad value ve: the variable unset, --set left out, the
// setting reset in the file.
func problemFix(cfg *config.Config, ve *config.ValueError) string {
	switch ve.Source {
	case config.SourceEnv:
		return "unset " + ve.Origin
	case config.SourceFlag:
		return "qkit doctor"
	}
	if ve.Key == "" {
		return editFix(cfg.File)
	}
	return "qkit settings reset " + ve.Key
}

// plural is "1 file" or "2 files"; forms, when given, are the singular and plural words to use.
func plural(n int, what string, forms ...string) string {
	one, many := what, what+"s"
	if len(forms) == 2 {
		one, many = forms[0], forms[1]
	}
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// checkContext: the profile in use and what its rules (with the global ones) send from o.Dir.
func checkContext(o Options) Check {
	c := Check{Name: CheckContext}
	store := contextfiles.NewStore(o.Config.Paths.Config)
	profile, err := store.ResolveProfile(o.Profile)
	if err != nil {
		c.Status, c.Detail = Fail, err.Error()
		switch {
		case o.Profile != "":
			c.Fix = "qkit context switch --create " + shellJoin(o.Profile)
		case output.Code(err) == output.ExitNotFound || strings.Contains(err.Error(), "corrupt active profile"):
			c.Fix = "qkit context switch " + contextfiles.DefaultProfile
		}
		return c
	}
	budget := config.ContextMaxTokens.Get(o.Config)
	rep, err := store.Collect(profile, o.Dir, budget, contextfiles.ReportOptions{})
	var corrupt *contextfiles.CorruptError
	switch {
	case errors.As(err, &corrupt):
		c.Status, c.Detail, c.Fix = Fail, err.Error(), editFix(corrupt.Path)
		return c
	case err != nil:
		c.Status, c.Detail, c.Fix = Fail, err.Error(), "qkit context show"
		return c
	}
	rules := len(rep.Rules.Global) + len(rep.Rules.Profile)
	c.Status = OK
	c.Detail = fmt.Sprintf("profile %s: %s (%s) from %s, about %d of %d tokens", profile,
		plural(len(rep.Files), "file"), plural(rules, "rule"), o.Dir, rep.TotalTokens, budget)
	if n := len(rep.Skipped); n > 0 {
		c.Detail += fmt.Sprintf("; %s never sent (binary or unreadable)", plural(n, "file"))
	}
	if len(rep.Dropped) > 0 {
		need := rep.NeededTokens()
		c.Status = Warn
		c.Detail += fmt.Sprintf("; over the budget, %s dropped (the largest %s)", plural(len(rep.Dropped), "", "file is", "files are"), rep.Dropped[0].Path)
		c.Fix = settingFix(config.ContextMaxTokens.Value(o.Config), strconv.FormatInt(need, 10))
	}
	return c
}

// checkDir: qkit can write in dir (what: "state" or "data"), tested by creating and removing a
// file in it, or, while it does not exist, in the folder it will be created in.
func checkDir(name, what, dir string) Check {
	c := Check{Name: name, Status: OK}
	probe, missing := dir, false
	for {
		fi, err := os.Stat(probe)
		if err == nil && fi.IsDir() {
			break
		}
		if err == nil || errors.Is(err, syscall.ENOTDIR) {
			file := probe
			if err != nil {
				file = firstFile(dir)
			}
			c.Status, c.Detail, c.Fix = Fail, fmt.Sprintf("the %s folder %s cannot be created: %s is a file", what, dir, file), "mv "+shellJoin(file, file+".bak")
			return c
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return dirFailure(c, what, dir, probe, err)
		}
		parent := filepath.Dir(probe)
		if parent == probe {
			return dirFailure(c, what, dir, probe, err)
		}
		probe, missing = parent, true
	}
	f, err := os.CreateTemp(probe, ".qkit-doctor-*")
	if err != nil {
		return dirFailure(c, what, dir, probe, err)
	}
	f.Close()
	if err := os.Remove(f.Name()); err != nil {
		return dirFailure(c, what, dir, probe, err)
	}
	c.Detail = fmt.Sprintf("the %s folder %s is writable", what, dir)
	if missing {
		c.Detail = fmt.Sprintf("the %s folder %s does not exist yet; qkit creates it in %s, which is writable", what, dir, probe)
	}
	return c
}

// firstFile is the first component of dir's path that exists and is not a folder.
func firstFile(dir string) string {
	var parts []string
	for p := dir; ; p = filepath.Dir(p) {
		parts = append(parts, p)
		if filepath.Dir(p) == p {
			break
		}
	}
	for i := len(parts) - 1; i >= 0; i-- {
		if fi, err := os.Stat(parts[i]); err == nil && !fi.IsDir() {
			return parts[i]
		}
	}
	return dir
}

func dirFailure(c Check, what, dir, probe string, err error) Check {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	c.Status = Fail
	c.Detail = fmt.Sprintf("the %s folder %s is not writable: %s: %v", what, dir, probe, err)
	c.Fix = "chmod u+rwx " + shellJoin(probe)
	if errors.Is(err, syscall.EROFS) {
		c.Fix = "export QKIT_HOME=" + shellJoin(filepath.Join(os.TempDir(), "qkit"))
	}
	return c
}
