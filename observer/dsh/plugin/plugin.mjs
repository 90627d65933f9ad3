// dshmem's plugin for the DSH host (placeholder; the real plugin lands with issue 10).
export const name = 'dshmem';
export const version = '1';
export const inject = ['systemPrompt', 'tools'];
export function apply(ctx, config) {}
