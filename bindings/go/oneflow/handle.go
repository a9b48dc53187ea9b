package oneflow

/*
#include <oneflow/oneflow_c.h>
*/
import "C"

import (
	"sync/atomic"
)

// life is the close protocol of every binding object: calls in flight are counted, Close marks the
// object closed, and whoever brings the count to zero on a closed object (Close itself, or the last
// call in flight) frees the C handle exactly once. No lock is held across C calls, so a Close from
// another goroutine never waits for, nor frees under, a running call.
type life struct {
	v atomic.Int64 // closedBit | calls in flight
}

const closedBit = int64(1) << 62

// enter counts a call; false when the object is closed.
func (l *life) enter() bool {
	for {
		v := l.v.Load()
		if v&closedBit != 0 {
			return false
		}
		if l.v.CompareAndSwap(v, v+1) {
			return true
		}
	}
}

// exit ends a call; true when the caller must now free the handle.
func (l *life) exit() bool {
	return l.v.Add(-1) == closedBit
}

// close marks the object closed; true when the caller must now free the handle (no call in flight).
func (l *life) close() bool {
	for {
		v := l.v.Load()
		if v&closedBit != 0 {
			return false
		}
		if l.v.CompareAndSwap(v, v|closedBit) {
			return v == 0
		}
	}
}

func (l *life) closed() bool { return l.v.Load()&closedBit != 0 }

// sessionCore is a session's C handle, shared by the Session and by every tensor, graph and
// optimizer made from it: each holds one reference, and of_session_destroy runs when the last is
// dropped, so it never races with a call that passes the handle.
type sessionCore struct {
	ptr  *C.of_session_t
	refs atomic.Int64
}

func (c *sessionCore) ref() { c.refs.Add(1) }

func (c *sessionCore) unref() {
	if c.refs.Add(-1) == 0 {
		C.of_session_destroy(c.ptr)
		c.ptr = nil
	}
}

// tensorResult wraps a new C reference (or converts the failing status).
func (c *sessionCore) tensorResult(st *C.of_status_t, out *C.of_tensor_t) (*Tensor, error) {
	if err := statusError(st); err != nil {
		return nil, err
	}
	return newTensor(c, out), nil
}
