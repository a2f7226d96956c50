package workflows

import (
	"errors"

	"director/errcode"
	"director/session"
)

// loginCheckMistake gives the error of a login check selector that the
// browser refuses as CSS the file, line and field of login_check, as a
// step's error has its step's, and drops the browser's JavaScript stack
// trace from the message. Other errors pass unchanged (a page answered 404
// is invalid_action too, and its hint is about the URL).
func loginCheckMistake(w *Workflow, err error) error {
	if !session.IsSelectorError(err) || w.LoginCheck == nil {
		return err
	}
	msg := err.Error()
	var e *errcode.Error
	if errors.As(err, &e) && e.Msg != "" {
		msg = e.Msg // "\"x\" is not a valid CSS selector", without the cause's stack trace
	}
	return errcode.New(errcode.InvalidAction, "%s:%d: login_check: %s", w.File, w.LoginCheck.Line, msg).
		WithHint("fix logged_in_selector / login_wall_selector under login_check: each must be valid CSS (an id or class with special characters needs escaping, e.g. #a\\:b)")
}
