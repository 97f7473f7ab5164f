package mcpserver

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// HelpText returns the extended help for a tool: a header with its state, then its Help. The
// error names the known tools.
func HelpText(d *Deps, name string) (string, error) {
	t, ok := Lookup(name)
	if !ok {
		return "", fmt.Errorf("unknown tool %q: known tools are %s", name, strings.Join(allNames(), ", "))
	}
	state := "enabled"
	if !d.Enabled(t) {
		state = "not enabled: " + NotEnabledMessage(t.Name)
	} else if t.Optional {
		state = "enabled (optional)"
	}
	return fmt.Sprintf("# %s\n\nState: %s\n\n%s", t.Name, state, strings.TrimSpace(t.Help)) + "\n", nil
}

func allNames() []string {
	var names []string
	for _, t := range Registry() {
		names = append(names, t.Name)
	}
	return names
}

type helpInput struct {
	ToolName string `json:"tool_name,omitempty" jsonschema:"the tool to explain; omit it to list every tool"`
}

const helpDescription = `Extended help for qkit's MCP tools: examples with arguments, common patterns and troubleshooting.
Pass tool_name for one tool; without it, lists every tool and whether it is enabled.`

func helpTool() Tool {
	return Tool{
		Name: "qkit_help",
		Help: `Examples:
  {"tool_name": "q-developer-agent"}   extended help for one tool
  {}                                   every tool, enabled or not, with how to enable the optional ones

Troubleshooting:
  - "unknown tool": the name must be one of the enum values in this tool's schema.
  - A tool you expected is missing from tools/list: it is optional and not enabled; qkit_help says how
    to enable it.`,
		Add: func(s *mcp.Server, d *Deps) {
			schema, err := jsonschema.For[helpInput](nil)
			if err != nil {
				panic(err) // a programming error in helpInput
			}
			enum := make([]any, 0)
			for _, n := range allNames() {
				enum = append(enum, n)
			}
			schema.Properties["tool_name"].Enum = enum
			mcp.AddTool(s, &mcp.Tool{
				Name:        "qkit_help",
				Title:       "qkit tool help",
				Description: helpDescription,
				InputSchema: schema,
				Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: new(false)},
			}, func(_ context.Context, _ *mcp.CallToolRequest, in helpInput) (*mcp.CallToolResult, any, error) {
				if in.ToolName == "" {
					return TextResult(overview(d)), nil, nil
				}
				text, err := HelpText(d, in.ToolName)
				if err != nil {
					return nil, nil, err
				}
				return TextResult(text), nil, nil
			})
		},
	}
}

func overview(d *Deps) string {
	var b strings.Builder
	b.WriteString("qkit MCP tools (call qkit_help with tool_name for details):\n")
	for _, t := range Registry() {
		state := "enabled"
		if !d.Enabled(t) {
			state = "not enabled; add it to ENABLE_ADDITIONAL_TOOLS or tools.enabled"
		}
		fmt.Fprintf(&b, "- %s (%s)\n", t.Name, state)
	}
	return b.String()
}
