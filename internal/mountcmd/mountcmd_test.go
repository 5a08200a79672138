package mountcmd

import (
	"testing"

	"github.com/kernfsim/kernfsim/fusefs"
)

// TestFlagOf: the settings fusefs's errors name read as the flags that
// set them, so the command's messages stay as they were.
func TestFlagOf(t *testing.T) {
	for _, c := range []struct {
		s    fusefs.Setting
		want string
	}{
		{fusefs.Setting{Field: "Force"}, "--force"},
		{fusefs.Setting{Field: "Transport", Value: "devfuse"}, "--transport devfuse"},
		{fusefs.Setting{Field: "MaxBackground", Value: "12"}, "MaxBackground=12"},
	} {
		if got := flagOf(c.s); got != c.want {
			t.Errorf("flagOf(%+v): got %q, want %q", c.s, got, c.want)
		}
	}
}
