package prompt

import (
	"context"
	"testing"
)

func TestStubAnswersInOrder(t *testing.T) {
	s := &Stub{Answers: []any{true, 1, []int{0, 2}, "hi"}}
	var p Prompter = s
	ctx := context.Background()
	if ok, _ := p.Confirm(ctx, "sure?", false); !ok {
		t.Fatal("confirm")
	}
	if i, _ := p.Select(ctx, "pick", []string{"a", "b"}, 0); i != 1 {
		t.Fatal("select")
	}
	if is, _ := p.MultiSelect(ctx, "many", []string{"a", "b", "c"}); len(is) != 2 {
		t.Fatal("multiselect")
	}
	if txt, _ := p.Input(ctx, "say", ""); txt != "hi" {
		t.Fatal("input")
	}
	if _, err := p.Confirm(ctx, "again?", false); err == nil {
		t.Fatal("empty queue must fail")
	}
	if len(s.Asked) != 5 {
		t.Fatalf("asked %v", s.Asked)
	}
}

func TestStubWrongKindFails(t *testing.T) {
	s := &Stub{Answers: []any{"text"}}
	if _, err := s.Confirm(context.Background(), "x", false); err == nil {
		t.Fatal("want error")
	}
}
