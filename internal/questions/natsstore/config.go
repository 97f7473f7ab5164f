package natsstore

import (
	"github.com/qkit-cli/qkit/internal/config"
	"github.com/qkit-cli/qkit/internal/questions"
)

var _ questions.Store = (*Store)(nil)

// Open connects to the NATS store the settings name (questions.nats_*): a questions.Opener, which
// the command layer adds to the stores it links as "nats".
func Open(cfg *config.Config, opts questions.Options) (questions.Store, error) {
	s, err := New(ConfigFrom(cfg), opts)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// ConfigFrom reads the questions.nats_* settings.
func ConfigFrom(cfg *config.Config) Config {
	return Config{
		URL:          config.QuestionsNATSURL.Get(cfg),
		Creds:        config.QuestionsNATSCreds.Get(cfg),
		Token:        config.QuestionsNATSToken.Get(cfg),
		TLSCert:      config.QuestionsNATSTLSCert.Get(cfg),
		TLSKey:       config.QuestionsNATSTLSKey.Get(cfg),
		TLSCA:        config.QuestionsNATSTLSCA.Get(cfg),
		Installation: config.QuestionsInstallation.Get(cfg),
		Retention:    config.QuestionsRetention.Get(cfg),
	}
}
