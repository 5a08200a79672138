package fusefs

import "github.com/kernfsim/kernfsim/kernfsim"

// caching reports whether the kernel may cache anything that a tree change
// could make stale.
func (s *Server) caching() bool {
	o := s.opts
	return o.EntryTimeout > 0 || o.AttrTimeout > 0 || o.NegativeTimeout > 0
}

// invalidate tells the kernel about one tree change, so that no stale
// positive entry, negative entry or attribute is served. It runs in the
// writer's goroutine after the writer has released the tree lock (a
// subscriber), so the change is already visible to the LOOKUP or GETATTR
// the kernel sends next. Errors (ENOENT: the kernel did not know the
// entry) are expected and ignored.
func (s *Server) invalidate(ev kernfsim.Event) {
	srv := s.fuse.Load()
	if srv == nil || !s.caching() {
		return
	}
	switch ev.Op {
	case kernfsim.OpAdd:
		srv.EntryNotify(ev.Parent.Ino(), ev.Name) // kills a cached negative entry
		srv.InodeNotify(ev.Parent.Ino(), -1, 0)   // the parent's nlink and times
	case kernfsim.OpRemove:
		srv.DeleteNotify(ev.Parent.Ino(), ev.Node.Ino(), ev.Name)
		srv.InodeNotify(ev.Parent.Ino(), -1, 0)
	case kernfsim.OpRename:
		srv.EntryNotify(ev.OldParent.Ino(), ev.OldName)
		srv.EntryNotify(ev.Parent.Ino(), ev.Name)
	case kernfsim.OpSetattr:
		srv.InodeNotify(ev.Node.Ino(), -1, 0)
	}
}
