package oneflow

/*
#include <oneflow/oneflow_c.h>
*/
import "C"

import (
	"errors"
	"fmt"
)

// Error is a failing status of the C library (or a misuse the binding catches, such as a call on a
// closed object): its code and its whole message. Use errors.As to get it, errors.Is with the
// sentinels (ErrInvalidArgument, ..., ErrClosed) or the Is* helpers to test the code.
type Error struct {
	Code    Code
	Message string
	closed  bool // a use of a closed object
}

func (e *Error) Error() string {
	return e.Code.String() + ": " + e.Message
}

// Is matches a sentinel by code (errors.Is(err, oneflow.ErrNotFound)); ErrClosed matches only uses
// of closed objects.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	if !ok {
		return false
	}
	if t == ErrClosed {
		return e.closed
	}
	return t.Message == "" && t.Code == e.Code
}

// String is the code's name ("INVALID_ARGUMENT"), from the library; a code it does not know prints as
// "code <n>".
func (c Code) String() string {
	name := C.GoString(C.of_status_code_name(C.of_status_code_t(c)))
	if name == "UNRECOGNIZED" {
		return fmt.Sprintf("code %d", int32(c))
	}
	return name
}

// Sentinels for errors.Is, matched by code.
var (
	ErrInvalidArgument    = &Error{Code: CodeInvalidArgument}
	ErrNotFound           = &Error{Code: CodeNotFound}
	ErrOutOfRange         = &Error{Code: CodeOutOfRange}
	ErrFailedPrecondition = &Error{Code: CodeFailedPrecondition}
	ErrUnimplemented      = &Error{Code: CodeUnimplemented}
	ErrResourceExhausted  = &Error{Code: CodeResourceExhausted}
	ErrDataLoss           = &Error{Code: CodeDataLoss}
	ErrPermissionDenied   = &Error{Code: CodePermissionDenied}
	ErrUnavailable        = &Error{Code: CodeUnavailable}
	ErrInternal           = &Error{Code: CodeInternal}
	// ErrClosed matches a call on a closed (or nil) Session, Tensor, Graph or Optimizer; its code is
	// FAILED_PRECONDITION.
	ErrClosed = &Error{Code: CodeFailedPrecondition, Message: "use of a closed object"}
)

// CodeOf is the code of a *Error in err's chain, CodeOK for nil, CodeUnknown for other errors.
func CodeOf(err error) Code {
	if err == nil {
		return CodeOK
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeUnknown
}

func IsInvalidArgument(err error) bool    { return CodeOf(err) == CodeInvalidArgument }
func IsNotFound(err error) bool           { return CodeOf(err) == CodeNotFound }
func IsOutOfRange(err error) bool         { return CodeOf(err) == CodeOutOfRange }
func IsFailedPrecondition(err error) bool { return CodeOf(err) == CodeFailedPrecondition }
func IsUnimplemented(err error) bool      { return CodeOf(err) == CodeUnimplemented }
func IsDataLoss(err error) bool           { return CodeOf(err) == CodeDataLoss }

// IsClosed reports a call on a closed object.
func IsClosed(err error) bool { return errors.Is(err, ErrClosed) }

func newError(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

func closedError(what, kind string) *Error {
	return &Error{Code: CodeFailedPrecondition, Message: fmt.Sprintf("%s: the %s is closed", what, kind), closed: true}
}

// statusError converts and frees a status: nil for NULL (success).
func statusError(st *C.of_status_t) error {
	if st == nil {
		return nil
	}
	e := &Error{Code: Code(C.of_status_code(st)), Message: C.GoString(C.of_status_message(st))}
	C.of_status_destroy(st)
	return e
}
