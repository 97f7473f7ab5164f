package cmd

// `qkit ask --schema`, --max-turns, --max-credits and -o: the flags and the thin
// layer between runAskEvents and internal/structured, which holds the behaviour.

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/qkit-cli/qkit/internal/app"
	"github.com/qkit-cli/qkit/internal/askrun"
	"github.com/qkit-cli/qkit/internal/output"
	"github.com/qkit-cli/qkit/internal/streamjson"
	"github.com/qkit-cli/qkit/internal/structured"
)

// askStructuredOptions are ask's flags for structured answers and budgets.
type askStructuredOptions struct {
	schemaArg  string
	retries    int
	maxTurns   int
	maxCredits float64
	outputFile string
	schema     *structured.Schema // compiled by checkAskStructured
}

func addAskStructuredFlags(c *cobra.Command, o *askStructuredOptions) {
	f := c.Flags()
	f.StringVar(&o.schemaArg, "schema", "", "answer with JSON valid against the JSON Schema in `FILE`, - or inline")
	f.IntVar(&o.retries, "schema-retries", structured.DefaultRetries, "ask again at most `N` times when the answer is not valid")
	f.IntVar(&o.maxTurns, "max-turns", 0, "send at most `N` prompts, retries included (0: no limit)")
	f.Float64Var(&o.maxCredits, "max-credits", 0, "stop once the agent reports more than `X` credits (0: no limit)")
	f.StringVarP(&o.outputFile, "output-file", "o", "", "write the final answer to `FILE`, only when the run succeeds")
	for _, name := range []string{"schema-retries", "max-turns", "max-credits"} {
		_ = c.RegisterFlagCompletionFunc(name, cobra.NoFileCompletions)
	}
}

// checkAskStructured validates the flags and compiles the schema before anything runs: every
// mistake here is exit 2. args is the prompt argument (the schema and the prompt cannot both be
// stdin).
func checkAskStructured(a *app.App, o *askStructuredOptions, args []string) error {
	switch {
	case o.retries < 0:
		return output.UsageErrorf("invalid --schema-retries %d: expected 0 or more", o.retries)
	case o.maxTurns < 0:
		return output.UsageErrorf("invalid --max-turns %d: expected 0 (no limit) or more", o.maxTurns)
	case o.maxCredits < 0:
		return output.UsageErrorf("invalid --max-credits %g: expected 0 (no limit) or more", o.maxCredits)
	}
	if o.schemaArg != "" {
		if o.schemaArg == "-" && (len(args) == 0 || args[0] == "-") {
			return output.UsageErrorf("--schema - reads the schema from stdin, so the prompt cannot come from there too: give it as an argument")
		}
		sch, err := loadSchema(o.schemaArg, a.IO.In) // full.go
		if err != nil {
			return output.UsageErrorf("--schema: %v", err)
		}
		o.schema = sch
	}
	if o.outputFile != "" {
		if err := structured.CheckOutputFile(o.outputFile); err != nil {
			return output.UsageErrorf("-o: %v", err)
		}
	}
	return nil
}

// askStructured is the run's askrun.Structured: nil without --schema and budgets. Each answer
// checked goes to stream (when set) and, when it is not valid, to stderr.
func askStructured(a *app.App, o *askStructuredOptions, stream *streamjson.Writer) *askrun.Structured {
	if o.schema == nil && o.maxTurns == 0 && o.maxCredits == 0 {
		return nil
	}
	return &askrun.Structured{
		Schema: o.schema, Retries: o.retries, MaxTurns: o.maxTurns, MaxCredits: o.maxCredits,
		OnAttempt: func(at structured.Attempt) {
			if stream != nil {
				stream.Attempt(at)
			}
			if !at.Valid {
				a.Warnf("answer %d is not the JSON asked for: %s", at.Attempt, strings.Join(at.Problems, "; "))
			}
		},
	}
}

// printText prints text output with --schema: the validated JSON, or, when the run failed, the
// last reply on stderr (stdout gets nothing a pipeline could take for the answer).
func askStructuredText(a *app.App, o *askStructuredOptions, run askrun.Run, exitErr error) {
	if o.schema == nil {
		return
	}
	if exitErr == nil && run.Structured.Output != nil {
		fmt.Fprintf(a.IO.Out, "%s\n", run.Structured.Output)
		return
	}
	if reply := strings.TrimRight(run.Structured.Reply, "\n"); reply != "" {
		fmt.Fprintf(a.IO.ErrOut, "qkit: the last reply, kept:\n%s\n", reply)
	}
}

// writeFile writes -o's file when the run succeeded: the validated JSON with --schema, else the
// reply.
func askOutputFile(o *askStructuredOptions, run askrun.Run, exitErr error) error {
	if o.outputFile == "" || exitErr != nil {
		return nil
	}
	data := []byte(run.Agent.Body())
	if o.schema != nil {
		data = append([]byte(run.Structured.Output), '\n')
	}
	if err := structured.WriteOutputFile(o.outputFile, data); err != nil {
		return output.Errorf(output.ExitFailure, "-o: %v", err)
	}
	return nil
}
