package receipt

// ReceiptFromDocument exposes receiptFromDocument to the external tests.
func ReceiptFromDocument(doc map[string]any, r *AgentWorkReceipt) error {
	return receiptFromDocument(doc, r)
}
