// Package demo runs dshmem's main job on bundled sample data in a fresh
// root and narrates each step: 'dshmem demo'.
//
// The steps use the engine and the tools as the commands do (observer,
// replay, events): ingest with validation and redaction, idempotent
// re-ingest, search, a DSH host import, distillation and a corrected fact,
// recall, the session-start context, verification, a torn tail and its
// repair, a rebuild of the index from the log alone, the Markdown files,
// and the recovery of a day file cut the way the incident that started
// dshmem cut one. The narration is the product, so Run writes it.
package demo
