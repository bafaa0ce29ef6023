package api

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// An area registers itself from its own file: its block of the operation table
// (servesOperations, in an init) and the store interfaces its handlers need (needsStore,
// a package variable the handlers read the store through), so that adding one edits no
// list shared with the other areas.

// operationBlock is an area's block of the operation table.
type operationBlock struct {
	rank       int
	operations func(*Server) []operation
}

// operationBlocks are the registered blocks, sorted by rank.
var operationBlocks []operationBlock

// servesOperations registers an area's block of the operation table. rank places it in the
// table, lowest first: the table's order is the order its routes are matched in (Fiber
// takes the first route that matches, so a static path such as /artifacts/by-entity must
// come before a parameter one that would take it, whatever their areas;
// TestNoRouteIsTakenByAnEarlierOne) and the order of an area's operations in GET /.
// Two blocks of one rank would leave their order to chance: it panics at start-up.
func servesOperations(rank int, operations func(*Server) []operation) {
	i, found := slices.BinarySearchFunc(operationBlocks, rank, func(b operationBlock, r int) int { return cmp.Compare(b.rank, r) })
	if found {
		panic(fmt.Sprintf("api: two blocks of operations have rank %d: give one another rank", rank))
	}
	operationBlocks = slices.Insert(operationBlocks, i, operationBlock{rank, operations})
}

// operations is the one table of v1 operations, area by area in the order of their ranks;
// it is mounted at /api/v1 and /api/client and is the source of the OpenAPI document.
func (s *Server) operations() []operation {
	var ops []operation
	for _, b := range operationBlocks {
		ops = append(ops, b.operations(s)...)
	}
	return ops
}

// storeSlot is a store interface S an area's handlers need, registered by needsStore and
// bound by NewDeps; the handlers read it through of.
type storeSlot[S any] struct{ index int }

// storeTypes are the registered store interfaces, by slot.
var storeTypes []reflect.Type

// needsStore registers the store interface S of an area (declared in the area's file). The
// value NewDeps binds must implement it, or NewDeps fails naming it and what is missing.
func needsStore[S any]() storeSlot[S] {
	t := reflect.TypeFor[S]()
	if t.Kind() != reflect.Interface {
		panic("api: needsStore of " + t.String() + ", which is not an interface")
	}
	if slices.Contains(storeTypes, t) {
		panic("api: the store interface " + t.String() + " is registered twice: areas that share it share its variable")
	}
	storeTypes = append(storeTypes, t)
	return storeSlot[S]{len(storeTypes) - 1}
}

// of is the store s serves the area with.
func (k storeSlot[S]) of(s *Server) S { return s.deps.stores[k.index].(S) }

// bindStores binds every registered store interface to stores, or says which ones it does
// not implement and why.
func bindStores(stores any) ([]any, error) {
	bound := make([]any, len(storeTypes))
	var missing []string
	typ := reflect.TypeOf(stores)
	for i, t := range storeTypes {
		if typ != nil && typ.Implements(t) {
			bound[i] = stores
			continue
		}
		missing = append(missing, t.String()+" ("+lacking(typ, t)+")")
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("api: %v does not implement the store interfaces of the areas (needsStore): %s", typ, strings.Join(missing, "; "))
	}
	return bound, nil
}

// lacking says why typ does not implement the interface iface: the first of its methods
// typ lacks or has with another signature.
func lacking(typ, iface reflect.Type) string {
	for i := range iface.NumMethod() {
		m := iface.Method(i)
		if typ == nil {
			return "no method " + m.Name
		}
		if _, ok := typ.MethodByName(m.Name); !ok {
			return "no method " + m.Name
		}
	}
	for i := range iface.NumMethod() {
		m := iface.Method(i)
		if got, _ := typ.MethodByName(m.Name); !methodMatches(typ, got, m) {
			return "method " + m.Name + " is " + got.Type.String() + ", want " + m.Type.String()
		}
	}
	return "no method it needs"
}

// methodMatches reports whether got, a method of typ, has the signature of want, an
// interface's method (a concrete type's method type takes its receiver first).
func methodMatches(typ reflect.Type, got, want reflect.Method) bool {
	if typ.Kind() == reflect.Interface {
		return got.Type == want.Type
	}
	t := got.Type
	if t.NumIn() != want.Type.NumIn()+1 || t.NumOut() != want.Type.NumOut() || t.IsVariadic() != want.Type.IsVariadic() {
		return false
	}
	for j := range want.Type.NumIn() {
		if t.In(j+1) != want.Type.In(j) {
			return false
		}
	}
	for j := range want.Type.NumOut() {
		if t.Out(j) != want.Type.Out(j) {
			return false
		}
	}
	return true
}
