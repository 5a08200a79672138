package kernfsim

// Op is the kind of change an Event reports.
type Op uint8

const (
	OpAdd Op = iota + 1
	OpRemove
	OpRename
	OpSetattr
)

func (o Op) String() string {
	switch o {
	case OpAdd:
		return "add"
	case OpRemove:
		return "remove"
	case OpRename:
		return "rename"
	case OpSetattr:
		return "setattr"
	}
	return "unknown"
}

// Event is a published change. Parent and Name are where Node now is (for
// OpRemove: where it was); OldParent and OldName are set for OpRename.
type Event struct {
	Op        Op
	Node      *Node
	Parent    *Node
	Name      string
	OldParent *Node
	OldName   string
}

type subscription struct{ fn func(Event) }

// Subscribe calls fn for every change, in the writer's goroutine, after the
// change is published and the writer lock released (so fn may read the
// tree, and a FUSE server may invalidate kernel caches from it). fn must
// not block for long: the writer waits for it. The returned func cancels.
func (t *Tree) Subscribe(fn func(Event)) (cancel func()) {
	s := &subscription{fn: fn}
	t.subMu.Lock()
	defer t.subMu.Unlock()
	var next []*subscription
	if cur := t.subs.Load(); cur != nil {
		next = append(next, *cur...)
	}
	next = append(next, s)
	t.subs.Store(&next)
	return func() { t.unsubscribe(s) }
}

func (t *Tree) unsubscribe(s *subscription) {
	t.subMu.Lock()
	defer t.subMu.Unlock()
	cur := t.subs.Load()
	if cur == nil {
		return
	}
	next := make([]*subscription, 0, len(*cur))
	for _, o := range *cur {
		if o != s {
			next = append(next, o)
		}
	}
	t.subs.Store(&next)
}

// notify tells every subscriber of ev.
//
// Preconditions: the write side is NOT held.
func (t *Tree) notify(ev Event) {
	if subs := t.subs.Load(); subs != nil {
		for _, s := range *subs {
			s.fn(ev)
		}
	}
}
