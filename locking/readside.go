package locking

// ReadSide is how code enters a strategy's read side, by its ScopedReads
// trait. Two shapes share it: a scope around a whole operation (a path
// walk), held only where reads are scoped; and a read of shared state per
// call, locked only where reads are not scoped (under scoped reads the
// enclosing scope covers it, or the state is published for lock-free
// readers). Exactly one of the two takes the read side under any strategy.
//
//	r := rs.EnterScope()          // walk
//	    c := rs.EnterCall()       //   each lookup, revalidate, permission
//	    ...
//	    rs.ExitCall(c)
//	rs.ExitScope(r)
//
// A ReadSide is a small value, immutable once made, safe to copy.
type ReadSide struct {
	s      Strategy // immutable
	scoped bool     // immutable: s.Traits().ScopedReads
}

// ReadSideOf returns the read side of s.
func ReadSideOf(s Strategy) ReadSide {
	return ReadSide{s: s, scoped: s.Traits().ScopedReads}
}

// EnterScope enters the read side for a whole operation if reads are
// scoped; otherwise it does nothing. Pass the token to ExitScope.
func (rs ReadSide) EnterScope() ReadToken {
	if !rs.scoped {
		return 0
	}
	return rs.s.RLock()
}

// ExitScope leaves what EnterScope entered.
func (rs ReadSide) ExitScope(t ReadToken) {
	if rs.scoped {
		rs.s.RUnlock(t)
	}
}

// EnterCall enters the read side for one call if reads are not scoped;
// otherwise it does nothing. Pass the token to ExitCall.
func (rs ReadSide) EnterCall() ReadToken {
	if rs.scoped {
		return 0
	}
	return rs.s.RLock()
}

// ExitCall leaves what EnterCall entered.
func (rs ReadSide) ExitCall(t ReadToken) {
	if !rs.scoped {
		rs.s.RUnlock(t)
	}
}
