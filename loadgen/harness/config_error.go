package harness

import "fmt"

// ConfigError is a configuration that cannot run: bad input, not a
// failure. Field names the configuration field at fault; the commands
// map it to their flag.
type ConfigError struct {
	Field   string // the Config field (or the path) at fault
	Problem string // what is wrong
	Hint    string // what to do about it
}

func (e *ConfigError) Error() string {
	s := e.Field + ": " + e.Problem
	if e.Hint != "" {
		s += " (" + e.Hint + ")"
	}
	return s
}

// BadConfig is a *ConfigError for field, its problem formatted from
// format and args.
func BadConfig(field, hint, format string, args ...any) *ConfigError {
	return &ConfigError{Field: field, Problem: fmt.Sprintf(format, args...), Hint: hint}
}
