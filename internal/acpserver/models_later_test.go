package acpserver

import (
	"context"
	"slices"
	"testing"

	acp "github.com/coder/acp-go-sdk"
)

// offeredModels are the values of a session's model option.
func offeredModels(opts []acp.SessionConfigOption) []string {
	var models []string
	for _, o := range opts {
		if o.Select != nil && o.Select.Options.Ungrouped != nil {
			for _, v := range *o.Select.Options.Ungrouped {
				models = append(models, string(v.Value))
			}
		}
	}
	return models
}

// TestModelsLoadedInBackground: initialize is answered while the agent's model list is still being
// fetched (Options.LoadModels); session/new's model option is that list once it has come.
func TestModelsLoadedInBackground(t *testing.T) {
	t.Parallel()
	asked, release := make(chan struct{}), make(chan struct{})
	h := startWith(t, "", func(o *Options) {
		o.Models = nil
		o.LoadModels = func(ctx context.Context) []string {
			close(asked)
			select {
			case <-release:
				return []string{"late-model"}
			case <-ctx.Done():
				return nil
			}
		}
	})
	<-asked
	h.initialize() // the list has not come: it comes only once this has been answered
	close(release)
	resp, err := h.conn.NewSession(context.Background(), acp.NewSessionRequest{Cwd: t.TempDir(), McpServers: []acp.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	if got := offeredModels(resp.ConfigOptions); !slices.Equal(got, []string{"default", "late-model"}) {
		t.Fatalf("model option %q", got)
	}
}

// TestModelsLoadStoppedWithServer: a list still being fetched when the editor goes is stopped
// (its context ends), and Serve returns only once it has.
func TestModelsLoadStoppedWithServer(t *testing.T) {
	t.Parallel()
	asked, stopped := make(chan struct{}), make(chan struct{})
	h := startWith(t, "", func(o *Options) {
		o.LoadModels = func(ctx context.Context) []string {
			close(asked)
			<-ctx.Done()
			close(stopped)
			return nil
		}
	})
	<-asked
	h.initialize()
	h.stop()
	select {
	case <-stopped:
	default:
		t.Fatal("Serve returned while the model list was still being fetched")
	}
}
