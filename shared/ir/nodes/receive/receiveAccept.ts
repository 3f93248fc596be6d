// Node `receiveAccept`: take a peer's tokens and metadata as they are (what a model without a receive node does).
import type { ReceiveDef } from '../../nodeTypeDef.ts';
import { modelParam, onModel } from '../parts.ts';

export const receiveAccept: ReceiveDef = {
  type: 'receiveAccept',
  category: 'receive',
  label: 'Receive: accept',
  description: "Accept the peer's tokens and metadata as they are (the default).",
  inputs: [],
  outputs: [],
  params: [modelParam('On model')],
  summary: onModel,
};
