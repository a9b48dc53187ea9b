//go:build !oneflow_nopkgconfig

package oneflow

// Installed use: the library's compile and link flags come from pkg-config (oneflow_c.pc, installed
// with liboneflow_c; point PKG_CONFIG_PATH at it for a non-standard prefix). Build with
// -tags oneflow_nopkgconfig to pass them yourself in CGO_CFLAGS / CGO_LDFLAGS instead, as the in-tree
// CMake build does.

// #cgo pkg-config: oneflow_c
import "C"
