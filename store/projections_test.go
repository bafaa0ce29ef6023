package store_test

import (
	"strings"
	"testing"

	"github.com/accountablework/accountable/projection"
	"github.com/accountablework/accountable/store"
)

// The predicate the projections' queries repeat names exactly the event types they read
// (the index's own definition is checked against the database in the api tests).
func TestProjectionPredicateNamesTheProjectionEvents(t *testing.T) {
	p := store.ProjectionEventsPredicate
	if strings.Count(p, "'")/2 != len(projection.EventTypes) {
		t.Fatalf("%s names %d types, the projections read %v", p, strings.Count(p, "'")/2, projection.EventTypes)
	}
	for _, et := range projection.EventTypes {
		if !strings.Contains(p, "'"+et+"'") {
			t.Errorf("%s lacks %s", p, et)
		}
	}
}
