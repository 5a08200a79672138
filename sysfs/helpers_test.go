package sysfs

import (
	"context"
	"os"

	"github.com/kernfsim/kernfsim/kernfsim"
)

// rootWrite writes data to the attribute at path as root, the way a
// shell's echo would, and returns the open's or the write's error. It may
// run off the test's goroutine.
func rootWrite(w *kernfsim.Walker, path, data string) error {
	f, err := w.Open(kernfsim.RootCred, path, os.O_WRONLY)
	if err != nil {
		return err
	}
	defer f.Release()
	_, err = f.Write(context.Background(), []byte(data))
	return err
}
