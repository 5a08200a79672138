// Package errtally counts failed operations by errno.
package errtally
