package main

import "testing"

func TestGreetText(t *testing.T) {
	if got := greetText("Hi", "Ada"); got != "Hi, Ada!" {
		t.Fatalf("greetText = %q", got)
	}
}
