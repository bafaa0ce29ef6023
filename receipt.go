package accountable

// Agent Work Receipts are validated and imported by package receipt; the root keeps the
// ledger vocabulary of an import, which the projections and discovery read.
const (
	AggregateReceipt     = "receipt"
	EventReceiptImported = "receipt.imported"
)
