package main

import (
	"testing"

	"github.com/accountablework/accountable/store/storetest"
)

func TestMain(m *testing.M) { storetest.Main(m) }
