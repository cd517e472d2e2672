import { chargedView } from '../http/extension-views.js';
import { httpHandler } from '../http/handler.js';
import { ChargeBody } from '../http/schemas/extensions.js';
import { ReservationIdParams } from '../http/schemas/runtime.js';
import { chargeReservation } from '../use-cases/charges.js';

export const handler = httpHandler(
  'chargeReservation',
  { params: ReservationIdParams, body: ChargeBody },
  async ({ caller, params, body, now, rate }) =>
    chargedView(await chargeReservation(caller, params.reservation_id, body, now, rate)),
);
