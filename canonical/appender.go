package canonical

import "reflect"

// Appender is a type that writes its own canonical JSON: exactly the bytes the reflective
// encoder makes of its values, without asking reflection for them (a ledger payload's
// canonical form is made on every command). JSON, AppendJSON and DigestOf use it for every
// value of the type they meet, at the top or inside another value, when it is implemented
// with a value receiver and declared by the type itself (a method a struct has only by
// embedding an Appender would write the embedded value alone: such a struct is encoded
// reflectively). Its tests must compare it with the reflective encoding on generated
// values: nothing else notices a difference.
//
// AppendCanonicalJSON appends the value's canonical form to buf. depth is the number of
// objects and arrays around the value, which it passes on, plus its own, to freeForm for
// the JSON text inside it (an accountable.Object). It may open at most
// MaxAppenderNesting objects, arrays and pointers of its own. Its error is never
// returned as it is: the encoder encodes the value reflectively then, and returns what
// that gives (the same bytes, or the error saying why there are none), so it may fail
// whenever it is in doubt (a NaN, say) without reproducing the encoder's errors.
//
// The domain types implement it without importing this package (the root and payload
// import only the standard library), so its signature names standard types only.
type Appender interface {
	AppendCanonicalJSON(buf []byte, depth int, freeForm FreeForm) ([]byte, error)
}

// FreeForm appends the canonical form of text, the JSON text a value's MarshalJSON
// returned (an accountable.Object's), found depth objects and arrays deep: what the
// reflective encoder appends for that value there.
type FreeForm = func(buf []byte, depth int, text []byte) ([]byte, error)

// MaxAppenderNesting bounds the objects, arrays and pointers an Appender's own form opens
// around its values (a payload's object, its task's object, the task's concurrency
// object). The encoder's bounds on them are checked by the reflective pass: an Appender is
// used only where that many more still fit within them.
const MaxAppenderNesting = 8

var appenderType = reflect.TypeFor[Appender]()

// isAppender reports whether t implements Appender itself: with a value receiver, and not
// by embedding a type that does (whose method would then be t's).
func isAppender(t reflect.Type) bool {
	if t.Kind() == reflect.Pointer || t.Kind() == reflect.Interface || !t.Implements(appenderType) {
		return false
	}
	if t.Kind() == reflect.Struct {
		for i := range t.NumField() {
			if f := t.Field(i); f.Anonymous && f.Type.Implements(appenderType) {
				return false
			}
		}
	}
	return true
}

// useAppender reports whether an Appender may write the value being encoded: not in the
// tests' reflective encoding, and with room for MaxAppenderNesting more objects, arrays
// and pointers within the bounds of the encoder.
func (e *canonEncoder) useAppender() bool {
	return !e.reflective && e.limit == maxCanonDepth &&
		e.depth+MaxAppenderNesting <= e.limit && e.hops+MaxAppenderNesting <= maxCanonDepth
}

// appender appends a's own canonical form, or appends nothing and fails.
func (e *canonEncoder) appender(a Appender) error {
	buf, err := a.AppendCanonicalJSON(e.buf, e.depth, appendFreeForm)
	if err != nil {
		return err
	}
	e.buf = buf
	return nil
}

// appendFreeForm is the FreeForm the encoder gives Appenders.
func appendFreeForm(buf []byte, depth int, text []byte) ([]byte, error) {
	e := canonEncoder{buf: buf, depth: depth, limit: maxCanonDepth}
	if err := e.marshaled(text); err != nil {
		return nil, err
	}
	return e.buf, nil
}
