module.exports = {
  handbook: [
    'intro',
    { type: 'category', label: 'Renting', items: ['renting/overview', 'renting/how-to-rent-online', 'renting/security-deposit', 'renting/minimum-rental'] },
    { type: 'category', label: 'Units', items: ['units/choosing-a-size', 'units/unit-sizes', 'units/lockers', 'units/goods-lift', 'units/climate-controlled', 'units/what-can-i-store'] },
    { type: 'category', label: 'Access', items: ['access/overview', 'access/access-app', 'access/gate-hours', 'access/office-hours', 'access/access-fobs'] },
    { type: 'category', label: 'Payments', items: ['payments/overview', 'payments/payment-methods', 'payments/late-fee', 'payments/billing-date', 'payments/prepay-discount', 'payments/price-review'] },
    { type: 'category', label: 'Insurance', items: ['insurance/overview', 'insurance/default-cover', 'insurance/making-a-claim'] },
    { type: 'category', label: 'Vans', items: ['vans/overview', 'vans/free-van-hire', 'vans/van-mileage'] },
    { type: 'category', label: 'Moving out', items: ['moving-out/notice-period', 'moving-out/checklist'] },
    { type: 'category', label: 'Business customers', items: ['business/overview', 'business/parcel-acceptance', 'business/loading-bay'] },
    { type: 'category', label: 'About us', items: ['about/sites', 'about/contact'] },
  ],
};
