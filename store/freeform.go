package store

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sync"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/canonical"
)

// decodeStored decodes JSON text the store reads back into v, and puts the free-form JSON
// in it (each accountable.Object, a process stage's other members) in canonical form
// (RFC 8785). The API gave that JSON in canonical form, but jsonb's text has its own
// member order, spacing and numbers: canonicalised again, what is read back answers with
// the bytes the request's answer had.
func decodeStored(data []byte, v any) error {
	if err := json.Unmarshal(data, v); err != nil {
		return err
	}
	return canonicalizeFreeForm(reflect.ValueOf(v))
}

var (
	objectType = reflect.TypeFor[accountable.Object]()
	stageType  = reflect.TypeFor[accountable.ProcessStage]()
)

// canonicalizeFreeForm canonicalises the free-form JSON v holds, in place.
func canonicalizeFreeForm(v reflect.Value) error {
	if !holdsFreeForm(v.Type()) {
		return nil
	}
	switch v.Type() {
	case objectType:
		if v.Len() == 0 {
			return nil
		}
		c, err := canonical.Transform(v.Bytes())
		if err != nil {
			return fmt.Errorf("store: free-form JSON: %w", err)
		}
		v.SetBytes(c)
		return nil
	case stageType:
		others := v.Interface().(accountable.ProcessStage).Others()
		for name, raw := range others {
			c, err := canonical.Transform(raw)
			if err != nil {
				return fmt.Errorf("store: a stage's %s: %w", name, err)
			}
			others[name] = c
		}
		return nil
	}
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			return canonicalizeFreeForm(v.Elem())
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				if err := canonicalizeFreeForm(v.Field(i)); err != nil {
					return err
				}
			}
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			if err := canonicalizeFreeForm(v.Index(i)); err != nil {
				return err
			}
		}
	case reflect.Map:
		iter := v.MapRange()
		for iter.Next() {
			elem := reflect.New(v.Type().Elem()).Elem()
			elem.Set(iter.Value())
			if err := canonicalizeFreeForm(elem); err != nil {
				return err
			}
			v.SetMapIndex(iter.Key(), elem)
		}
	}
	return nil
}

var freeFormTypes sync.Map // reflect.Type -> bool

// holdsFreeForm reports whether values of type t may hold free-form JSON. Interfaces are
// taken to hold none: what encoding/json decodes into one is maps, slices and scalars.
func holdsFreeForm(t reflect.Type) bool {
	if b, ok := freeFormTypes.Load(t); ok {
		return b.(bool)
	}
	b := typeHoldsFreeForm(t, map[reflect.Type]bool{})
	freeFormTypes.Store(t, b)
	return b
}

// typeHoldsFreeForm is holdsFreeForm of t, the types in seen (being looked at, further
// out in a recursive type) counted as holding none of their own.
func typeHoldsFreeForm(t reflect.Type, seen map[reflect.Type]bool) bool {
	if t == objectType || t == stageType {
		return true
	}
	if seen[t] {
		return false
	}
	seen[t] = true
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
		return typeHoldsFreeForm(t.Elem(), seen)
	case reflect.Struct:
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() && typeHoldsFreeForm(f.Type, seen) {
				return true
			}
		}
	}
	return false
}
