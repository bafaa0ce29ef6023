package accountable_test

import (
	"reflect"
	"testing"

	"github.com/accountablework/accountable"
)

// A revision's request shape and its resource shape have the same fields (by Go name), so
// that nothing a request may say is lost on the way to the revision, and Content copies
// every one of them.
func TestRevisionInputMatchesContent(t *testing.T) {
	in, out := reflect.TypeFor[accountable.RevisionInput](), reflect.TypeFor[accountable.RevisionContent]()
	if in.NumField() != out.NumField() {
		t.Fatalf("RevisionInput has %d fields, RevisionContent %d", in.NumField(), out.NumField())
	}
	// Every field set in the input is set in the content.
	v := reflect.New(in).Elem()
	for i := range in.NumField() {
		name := in.Field(i).Name
		if _, ok := out.FieldByName(name); !ok {
			t.Fatalf("RevisionContent lacks %s", name)
		}
		f := v.Field(i)
		switch f.Kind() {
		case reflect.Slice:
			f.Set(reflect.MakeSlice(f.Type(), 1, 1))
		case reflect.Pointer:
			f.Set(reflect.New(f.Type().Elem()))
		}
	}
	content := reflect.ValueOf(v.Interface().(accountable.RevisionInput).Content("ws"))
	for i := range out.NumField() {
		if content.Field(i).IsZero() {
			t.Errorf("Content does not copy %s", out.Field(i).Name)
		}
	}
}
