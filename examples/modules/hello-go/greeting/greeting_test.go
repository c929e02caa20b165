package greeting

import "testing"

func TestText(t *testing.T) {
	if got := Text("Hi", "Ada"); got != "Hi, Ada!" {
		t.Fatalf("Text = %q", got)
	}
}
