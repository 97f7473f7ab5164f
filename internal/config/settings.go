package config

import (
	"fmt"
	"time"
)

// Setting is a typed handle on one key of Keys: Get reads its value from a loaded Config as a T,
// Parse reads text as the setting reads it (a flag that stands in for a setting, such as ask
// --timeout, parses with it and hands the value to the runner itself). TestSettingHandles checks
// every handle against Keys, both ways: each names a key whose kind gives a T, and every key has a
// handle. Nothing reads a setting by its name: TestNoSettingReadByName fails on a setting's name in
// a string outside these definitions, and Config.Lookup (for a name the user typed) cannot panic.
type Setting[T any] struct{ Name string }

// Get returns the setting's value in c.
func (s Setting[T]) Get(c *Config) T { return c.get(s.Name).Parsed.(T) }

// Value returns the setting in c with its text and where it came from (Source, Origin).
func (s Setting[T]) Value(c *Config) Value { return c.get(s.Name) }

// Key returns the setting's entry in Keys (its kind, allowed values, description).
func (s Setting[T]) Key() Key {
	k, _ := LookupKey(s.Name)
	return k
}

// Parse reads raw as the setting does, with its checks (a range, the allowed values).
func (s Setting[T]) Parse(raw string) (T, error) {
	var zero T
	k, ok := LookupKey(s.Name)
	if !ok {
		return zero, UnknownKeyError(s.Name)
	}
	v, err := k.Parse(raw)
	if err != nil {
		return zero, err
	}
	t, ok := v.(T)
	if !ok {
		return zero, fmt.Errorf("setting %s is a %s, not a %T", s.Name, k.Kind, zero)
	}
	return t, nil
}

// The settings, one handle each, in the order of Keys.
var (
	AgentCommand          = setting[string]("agent.command")
	AgentTimeout          = setting[time.Duration]("agent.timeout")
	AgentMaxResponseSize  = setting[int64]("agent.max_response_size")
	AgentModel            = setting[string]("agent.model")
	AgentModels           = setting[[]string]("agent.models")
	AgentStripANSI        = setting[bool]("agent.strip_ansi")
	AgentRawOutput        = setting[bool]("agent.raw_output")
	AgentBackend          = setting[string]("agent.backend")
	ToolsEnabled          = setting[[]string]("tools.enabled")
	QuestionsTimeout      = setting[time.Duration]("questions.timeout")
	QuestionsRetention    = setting[time.Duration]("questions.retention")
	QuestionsProgress     = setting[time.Duration]("questions.progress_interval")
	QuestionsVia          = setting[string]("questions.via")
	QuestionsStore        = setting[string]("questions.store")
	QuestionsInstallation = setting[string]("questions.installation")
	QuestionsNATSURL      = setting[string]("questions.nats_url")
	QuestionsNATSCreds    = setting[string]("questions.nats_creds")
	QuestionsNATSToken    = setting[string]("questions.nats_token")
	QuestionsNATSTLSCert  = setting[string]("questions.nats_tls_cert")
	QuestionsNATSTLSKey   = setting[string]("questions.nats_tls_key")
	QuestionsNATSTLSCA    = setting[string]("questions.nats_tls_ca")
	ACPEnabled            = setting[bool]("acp.enabled")
	ContextMaxTokens      = setting[int64]("context.max_tokens")
	ContextWalkMaxFiles   = setting[int64]("context.walk_max_files")
	ContextWalkTimeout    = setting[time.Duration]("context.walk_timeout")
	InternalTrusted       = setting[[]string]("internal.trusted")
	LogLevel              = setting[string]("log.level")
)

// handle is what TestSettingHandles needs of a Setting, whatever its T.
type handle interface {
	name() string
	zero() any
}

func (s Setting[T]) name() string { return s.Name }
func (s Setting[T]) zero() any    { var z T; return z }

// handles lists every Setting, each added by setting as it is made, for TestSettingHandles.
var handles []handle

// setting makes the handle on the key called name and records it.
func setting[T any](name string) Setting[T] {
	s := Setting[T]{Name: name}
	handles = append(handles, s)
	return s
}
