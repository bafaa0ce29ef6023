package api

import (
	"reflect"
	"slices"
)

// WrapStore replaces the store d serves the areas of interface S with (needsStore) by what
// wrap makes of it, so that a test can count or fail its calls.
func WrapStore[S any](d *Deps, wrap func(S) S) {
	i := slices.Index(storeTypes, reflect.TypeFor[S]())
	if i < 0 {
		panic("api: WrapStore of " + reflect.TypeFor[S]().String() + ", which no area registered (needsStore)")
	}
	d.stores = slices.Clone(d.stores)
	d.stores[i] = wrap(d.stores[i].(S))
}
