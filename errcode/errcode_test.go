package errcode

import (
	"errors"
	"fmt"
	"io"
	"testing"
)

func TestOfAndExitStatus(t *testing.T) {
	tests := []struct {
		name string
		err  error
		code Code
		exit int
	}{
		{"nil", nil, "", ExitOK},
		{"plain", io.EOF, Internal, ExitFailure},
		{"coded", New(ProfileInUse, "busy"), ProfileInUse, ExitFailure},
		{"wrapped by fmt", fmt.Errorf("ctx: %w", New(HumanRequired, "login wall")), HumanRequired, ExitHumanRequired},
		{"blocked", Wrap(io.EOF, DomainBlocked, "x"), DomainBlocked, ExitDomainBlocked},
		{"usage", New(InvalidInput, "bad name"), InvalidInput, ExitUsage},
		{"workflow", New(InvalidAction, "bad step"), InvalidAction, ExitUsage},
		{"outermost wins", Wrap(New(Timeout, "t"), SnapshotCorrupt, "c"), SnapshotCorrupt, ExitFailure},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Of(tt.err); got != tt.code {
				t.Errorf("Of = %q, want %q", got, tt.code)
			}
			if got := ExitStatus(tt.err); got != tt.exit {
				t.Errorf("ExitStatus = %d, want %d", got, tt.exit)
			}
		})
	}
}

func TestHintAndUnwrap(t *testing.T) {
	inner := New(ProfileNotFound, "no profile %q", "work").WithHint("run: director profile create work")
	err := fmt.Errorf("restore: %w", Wrap(inner, SnapshotNotFound, "outer"))
	if got := HintOf(err); got != "run: director profile create work" {
		t.Errorf("HintOf = %q", got)
	}
	if !errors.Is(err, New(ProfileNotFound, "")) {
		t.Error("errors.Is by code failed")
	}
	if errors.Is(err, New(Timeout, "")) {
		t.Error("errors.Is matched the wrong code")
	}
	if Wrap(nil, Internal, "x") != nil {
		t.Error("Wrap(nil) must be nil")
	}
	if got := Wrap(io.EOF, Internal, "reading").Error(); got != "reading: EOF" {
		t.Errorf("Error() = %q", got)
	}
}
