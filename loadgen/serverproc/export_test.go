package serverproc

// ParseMount is parseMount, for the external tests.
var ParseMount = parseMount
