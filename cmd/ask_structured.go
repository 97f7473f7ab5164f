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

const askStructuredHelp = `

Structured answers: --schema FILE (or - for stdin, or the schema itself as JSON) sends the prompt
with an instruction to answer with one JSON document valid against that JSON Schema (draft 2020-12
unless its $schema names draft-07; $ref only inside the schema). qkit takes the JSON
from the reply (the whole reply, or the one fenced block of it), validates it, and when it is not
valid asks again in the same session (acp: the same ACP session; chat: --resume) with the errors,
up to --schema-retries times (default 2). Text output is then the validated JSON only; --json and
stream-json add structured_output and attempts (stream-json also one structured_attempt event per
answer). No valid answer is exit 5, with the errors on stderr and the last reply kept (on stderr
in text output, in output with --json). A schema that does not compile is exit 2, before anything
runs. qkit help structured-output shows exactly what is sent.

Budgets: --max-turns N stops before a prompt that would be the run's N+1th (retries count);
--max-credits X stops the turn once the agent reports more than X credits for the run (acp
backend: kiro's _kiro.dev/metadata). Either is exit 6, with what arrived kept.
-o FILE writes the final answer (the validated JSON with --schema, else the reply) to FILE
atomically, whatever stdout carries; nothing is written when the run fails. Its directory must
exist (exit 2 before running).`

func addAskStructuredFlags(c *cobra.Command, o *askStructuredOptions) {
	c.Long += askStructuredHelp
	c.Example += `
  qkit ask --schema findings.schema.json -o findings.json "List the TODOs as findings"
  qkit ask --schema '{"type":"object","required":["ok"]}' --max-turns 2 "Is the build green?" | jq .ok`
	f := c.Flags()
	f.StringVar(&o.schemaArg, "schema", "", "answer with JSON valid against this JSON Schema: a `FILE`, - (stdin), or the schema as JSON; text output prints the validated JSON only")
	f.IntVar(&o.retries, "schema-retries", structured.DefaultRetries, "with --schema, ask again in the same session at most `N` times when the answer is not valid")
	f.IntVar(&o.maxTurns, "max-turns", 0, "send at most `N` prompts in this run, retries included (0: no limit); exit 6 when another is needed")
	f.Float64Var(&o.maxCredits, "max-credits", 0, "stop the run once the agent reports more than `X` credits (acp backend; 0: no limit); exit 6")
	f.StringVarP(&o.outputFile, "output-file", "o", "", "write the final answer (with --schema, the validated JSON) to `FILE` atomically; nothing is written when the run fails")
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
